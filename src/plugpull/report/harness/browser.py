"""Pages as a reader sees them: headless Chromium measures a page's layout and takes its screenshot.

Chromium's own command line is enough, so nothing else is installed: ``--dump-dom`` prints the DOM after
the page's load event, and the page measured is a copy with one script added before ``</body>`` that, on
load, writes what it measured (the viewport's width, the document's scroll width, the right edge of every
table and figure, the size images were drawn at against their own, the smallest font in a table) into the
DOM as JSON. A DevTools-protocol client (pychrome, playwright) would do the same through a socket and a
dependency; the pages have no script of their own, so the added one is the only code that runs.

The copy sits in a scratch folder with ``<base href>`` pointing at the original's folder, so relative links
and images resolve as they would; the profile (``--user-data-dir``) is fresh per call and removed after.
The flags keep Chromium offline here: no sandbox (CI runs as root), no GPU, no QUIC, no first-run, sync,
component update or background networking (https://peter.sh/experiments/chromium-command-line-switches/).

``python -m plugpull.report.harness.browser screenshot PAGE PNG [--width N]`` writes a screenshot of the
whole page (how docs/scorecard-screenshot.png and docs/summary-screenshot.png are made);
``python -m plugpull.report.harness.browser measure PAGE [--width N]`` prints what overflows and every word broken
inside (a line break other than at a space or right after ``=`` or ``,``), exit 1 if any.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.errors import BrowserError

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--mute-audio",
)
WIDTH = 1280  # a laptop's browser window: every page must fit it
TIMEOUT = 120.0
MEASURED_ID = "plugpull-measured"
# Added before </body> of the copy. Elements inside an <svg> are measured as the svg. In a frame of
# measure_all's host page it also posts the JSON to the host (a file:// frame is another origin to its host).
SCRIPT = """
<script>
// Words laid out over two lines other than right after "=" or "," or at a <wbr> (a word is a run of characters
// without white space, across elements: <span>api=</span><wbr><span>functional</span> is one; a <br> or a box
// ends it), and words in a table cell that run past its right edge. Text in <pre>, <svg>, <script> and <style> is
// left out (it does not wrap).
function brokenWords() {
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
  const chars = [];  // [node, offset] per character of text, null between two blocks
  const allowed = new Set();  // indices of chars a <wbr> comes before
  let block = null;
  const boxOf = (el) => {  // the nearest element that is not laid out inline: a line break between two is no break
    while (el.parentElement && getComputedStyle(el).display === "inline") el = el.parentElement;
    return el;
  };
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.ELEMENT_NODE) {
      if (node.tagName === "BR") chars.push(null);  // a line break where the page asks for one
      if (node.tagName === "WBR") allowed.add(chars.length);  // a break the page allows (a run id's T)
      continue;
    }
    const parent = node.parentElement;
    if (!parent || parent.closest("pre, svg, script, style, #MEASURED_ID")) continue;
    const mine = boxOf(parent);
    if (mine !== block) { chars.push(null); block = mine; }
    for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
  }
  const lines = (range) => {
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    rects.sort((a, b) => a.top - b.top);
    let count = 0, bottom = -Infinity;
    for (const r of rects) { if (r.top >= bottom - 1) { count++; bottom = r.bottom; } else bottom = Math.max(bottom, r.bottom); }
    return [count, rects];
  };
  const rangeOf = (a, b) => {
    const range = document.createRange();
    range.setStart(chars[a][0], chars[a][1]);
    range.setEnd(chars[b][0], chars[b][1] + 1);
    return range;
  };
  const isSpace = (c) => c === null || /\\s/.test(c[0].data[c[1]]);
  let start = null;
  for (let i = 0; i <= chars.length; i++) {
    if (i < chars.length && !isSpace(chars[i])) { if (start === null) start = i; continue; }
    if (start === null) continue;
    const end = i - 1, word = chars.slice(start, i).map((c) => c[0].data[c[1]]).join("");
    const [count, rects] = lines(rangeOf(start, end));
    if (count > 1) {
      for (let k = start + 1; k <= end; k++) {
        const before = rangeOf(k - 1, k - 1).getBoundingClientRect(), here = rangeOf(k, k).getBoundingClientRect();
        const ch = word[k - 1 - start];
        if (here.top >= before.bottom - 1 && ch !== "=" && ch !== "," && !allowed.has(k)) {
          found.push({ word: word.slice(0, 80), at: k - start, why: "broken" });
          break;
        }
      }
    }
    const cell = chars[start][0].parentElement.closest("td, th");
    if (cell && rects.length) {
      const edge = cell.getBoundingClientRect().right, right = Math.max(...rects.map((r) => r.right));
      if (right > edge + 1) found.push({ word: word.slice(0, 80), at: word.length, why: "past its cell" });
    }
    start = null;
    if (found.length >= 50) break;
  }
  return found;
}
addEventListener("load", () => {
  const root = document.documentElement;
  const items = [];
  for (const el of document.querySelectorAll("table, img, svg, canvas, video, iframe, figure")) {
    if (el.parentElement && el.parentElement.closest("svg")) continue;
    const r = el.getBoundingClientRect();
    const text = (el.getAttribute("alt") || el.textContent || el.getAttribute("src") || "").trim();
    items.push({
      tag: el.tagName.toLowerCase(), left: r.left, right: r.right, width: r.width, height: r.height,
      natural: el.naturalWidth || null, text: text.replace(/\\s+/g, " ").slice(0, 80),
    });
  }
  let smallest = null;
  for (const el of document.querySelectorAll("td, th")) {
    if (!el.textContent.trim()) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (smallest === null || size < smallest) smallest = size;
  }
  const out = document.createElement("pre");
  out.id = "MEASURED_ID";
  out.textContent = JSON.stringify({
    viewport: root.clientWidth, scroll_width: root.scrollWidth, height: root.scrollHeight,
    items: items, smallest_table_font: smallest, broken: brokenWords(),
  });
  document.body.appendChild(out);
  if (window.parent !== window) window.parent.postMessage(out.textContent, "*");
});
</script>
""".replace("MEASURED_ID", MEASURED_ID)


def find() -> str | None:
    """The Chromium to run: $PLUGPULL_CHROMIUM, else the first of :data:`NAMES` on PATH."""
    chosen = os.environ.get("PLUGPULL_CHROMIUM")
    if chosen:
        return chosen if shutil.which(chosen) else None
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def run(args: list[str], timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Chromium with :data:`FLAGS`, a fresh profile and ``args``; its whole process group is ended on a timeout."""
    binary = find()
    if binary is None:
        raise BrowserError(f"no Chromium on PATH (looked for {', '.join(NAMES)}; Debian: apt-get install chromium)")
    profile = Path(tempfile.mkdtemp(prefix="plugpull-chromium-"))
    command = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its renderer and GPU processes are in its group
        process.communicate()
        raise BrowserError(f"Chromium did not finish within {timeout:.0f} s: {' '.join(args[-2:])}") from None
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    # The helper processes a headless Chromium leaves behind (zygote, crashpad) are ended with its group.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@dataclass
class Item:
    tag: str
    left: float
    right: float
    width: float
    height: float
    natural: float | None
    text: str

    def describe(self) -> str:
        return f"<{self.tag}> {self.text[:60]!r}"


@dataclass
class Layout:
    """What the added script measured, at one window width."""

    page: Path
    viewport: float
    scroll_width: float
    height: float
    items: list[Item] = field(default_factory=list)
    smallest_table_font: float | None = None
    broken: list[dict[str, Any]] = field(default_factory=list)  # the script's brokenWords(): word, at, why

    def broken_words(self) -> list[str]:
        """One line per word laid out over two lines other than right after ``=`` or ``,``, or running past its
        table cell's right edge (the first 50)."""
        return [
            f"{b['word'][: b['at']]!r} | {b['word'][b['at'] :]!r}: a word broken inside"
            if b["why"] == "broken"
            else f"{b['word']!r} runs past its table cell"
            for b in self.broken
        ]

    def overflows(self) -> list[str]:
        """One line per thing that runs off the right edge (the page itself, a table, a figure)."""
        out = []
        if self.scroll_width > self.viewport + 1:
            out.append(f"the page scrolls sideways: {self.scroll_width:.0f} px wide in a {self.viewport:.0f} px window")
        out += [
            f"{item.describe()} ends at {item.right:.0f} px, past the {self.viewport:.0f} px window"
            for item in self.items
            if item.right > self.viewport + 1
        ]
        return out

    def shrunk(self, least: float = 0.75) -> list[str]:
        """Images drawn at less than ``least`` of their own width (their text shrinks with them)."""
        return [
            f"{item.describe()} is drawn at {item.width:.0f} of its {item.natural:.0f} px ({item.width / item.natural:.0%})"
            for item in self.items
            if item.tag == "img" and item.natural and item.width < least * item.natural
        ]


def _instrumented(page: Path, folder: Path) -> Path:
    text = page.read_text()
    base = f'<base href="{html.escape(page.resolve().parent.as_uri())}/">'
    text = re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + base, text, count=1, flags=re.IGNORECASE)
    if re.search(r"</body>", text, flags=re.IGNORECASE):
        text = re.sub(r"</body>", lambda m: SCRIPT + m.group(0), text, count=1, flags=re.IGNORECASE)
    else:
        text += SCRIPT
    copy = folder / page.name
    copy.write_text(text)
    return copy


def measure(page: Path, width: int = WIDTH, height: int = 900, timeout: float = TIMEOUT) -> Layout:
    """``page`` laid out in a ``width`` px window, as :class:`Layout`."""
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-measure-"))
    try:
        copy = _instrumented(page, scratch)
        done = run(
            [f"--window-size={width},{height}", "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()],
            timeout,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    found = re.search(rf'<pre id="{MEASURED_ID}">(.*?)</pre>', done.stdout, flags=re.DOTALL)
    if found is None:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])[:300]
        raise BrowserError(f"Chromium (exit {done.returncode}) printed no measurement of {page}: {tail}")
    return _layout(page, found.group(1))


# The host page of measure_all: one frame a page, each the window's size, and what each frame posts written into
# the host's DOM under the frame's index (its event's source is the frame's window).
HOST_SCRIPT = """
<script>
addEventListener("message", (event) => {
  const frames = document.querySelectorAll("iframe");
  for (let i = 0; i < frames.length; i++) {
    if (frames[i].contentWindow !== event.source) continue;
    const out = document.createElement("pre");
    out.id = "MEASURED_ID-" + i;
    out.textContent = event.data;
    document.body.appendChild(out);
  }
});
</script>
""".replace("MEASURED_ID", MEASURED_ID)


def _layout(page: Path, measured: str) -> Layout:
    data: dict[str, Any] = json.loads(html.unescape(measured))
    return Layout(
        page=page,
        viewport=data["viewport"],
        scroll_width=data["scroll_width"],
        height=data["height"],
        items=[Item(**item) for item in data["items"]],
        smallest_table_font=data["smallest_table_font"],
        broken=data.get("broken") or [],
    )


def measure_all(
    pages: list[Path], width: int = WIDTH, height: int = 900, timeout: float = TIMEOUT
) -> list[Layout | BrowserError]:
    """Each of ``pages`` laid out in a ``width`` x ``height`` frame, by one Chromium: a :class:`Layout` each, or
    the :class:`BrowserError` saying it printed no measurement of that page.

    One launch instead of one a page (a launch costs about a CPU-second). A frame is its page's window: its
    viewport, scroll width, media queries and ``<base>`` are the page's own, and the boxes and fonts are those
    :func:`measure` gives (tests/report/test_pages_in_chromium.py compares them). Only ``height`` differs for a
    page shorter than the window: a frame's inside is ``height`` px, a headless window's less (its bars)."""
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-measure-"))
    try:
        frames = []
        for index, page in enumerate(pages):
            (folder := scratch / str(index)).mkdir()
            copy = _instrumented(page, folder)
            frames.append(
                f'<iframe src="{html.escape(copy.as_uri())}" width="{width}" height="{height}" '
                'style="border:0;display:block"></iframe>'
            )
        host = scratch / "host.html"
        host.write_text(
            f'<!DOCTYPE html><html><head>{HOST_SCRIPT}</head><body style="margin:0">{"".join(frames)}</body></html>'
        )
        done = run(
            [f"--window-size={width},{height}", "--virtual-time-budget=10000", "--dump-dom", host.as_uri()], timeout
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    found = dict(re.findall(rf'<pre id="{MEASURED_ID}-(\d+)">(.*?)</pre>', done.stdout, flags=re.DOTALL))
    tail = " ".join(done.stderr.strip().splitlines()[-2:])[:300]
    return [
        _layout(page, found[str(index)])
        if str(index) in found
        else BrowserError(f"Chromium (exit {done.returncode}) printed no measurement of {page}: {tail}")
        for index, page in enumerate(pages)
    ]


#: The PNG text chunk (tEXt, https://www.w3.org/TR/png/#11tEXt) a screenshot records its page's sha256 in, so
#: ``plugpull report check`` can tell a screenshot of today's page from an older one without a browser.
SOURCE_KEY = "plugpull-source-sha256"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def source_digest(page: Path) -> str:
    """The sha256 of ``page``'s bytes, as a screenshot of it records it."""
    return hashlib.sha256(page.read_bytes()).hexdigest()


def png_text(png: Path) -> dict[str, str]:
    """The tEXt chunks of a PNG (keyword -> text); empty for a file that is not a PNG."""
    data = png.read_bytes() if png.is_file() else b""
    if not data.startswith(PNG_SIGNATURE):
        return {}
    out, at = {}, len(PNG_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"tEXt":
            keyword, _, text = data[at + 8 : at + 8 + length].partition(b"\0")
            out[keyword.decode("latin-1")] = text.decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return out


def _with_text(data: bytes, keyword: str, text: str) -> bytes:
    """The PNG ``data`` with a tEXt chunk right after its IHDR (the first chunk, 25 bytes past the signature)."""
    body = keyword.encode("latin-1") + b"\0" + text.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    end = len(PNG_SIGNATURE) + 25
    return data[:end] + chunk + data[end:]


def screenshot(page: Path, png: Path, width: int = WIDTH, timeout: float = TIMEOUT) -> Path:
    """A PNG of the whole of ``page`` in a ``width`` px window (its height measured first), recording the page's
    sha256 under :data:`SOURCE_KEY`."""
    height = int(measure(page, width, timeout=timeout).height) + 16
    png.parent.mkdir(parents=True, exist_ok=True)
    digest = source_digest(page)
    drawn = png.with_name(png.stem + ".part.png")  # Chromium picks the format by the extension
    done = run(
        [f"--window-size={width},{height}", f"--screenshot={drawn.resolve()}", page.resolve().as_uri()],
        timeout,
    )
    if not drawn.is_file():
        raise BrowserError(f"Chromium (exit {done.returncode}) wrote no screenshot of {page}")
    data = drawn.read_bytes()
    drawn.unlink()
    if not data.startswith(PNG_SIGNATURE):
        raise BrowserError(f"Chromium wrote no PNG for {page}")
    png.write_bytes(_with_text(_palette(data), SOURCE_KEY, digest))
    return png


def _palette(data: bytes, colours: int = 64) -> bytes:
    """A page's screenshot as a palette PNG of ``colours`` (flat fills and text fit one: the scorecard's is 821 KB as
    Chromium's RGB, a fifth of it as 64 colours), or ``data`` as it is without Pillow (matplotlib's dependency)."""
    try:
        from PIL import Image
    except ImportError:
        return data
    import io

    out = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("RGB").quantize(colours).save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m plugpull.report.harness.browser", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="a PNG of the whole page")
    shot.add_argument("page", type=Path)
    shot.add_argument("png", type=Path)
    shot.add_argument("--width", type=int, default=WIDTH)
    check = sub.add_parser("measure", help="what runs off the right edge (exit 1 if anything does)")
    check.add_argument("page", type=Path)
    check.add_argument("--width", type=int, default=WIDTH)
    args = parser.parse_args(argv)
    if not args.page.is_file():
        print(f"{parser.prog}: no such page: {args.page}", file=sys.stderr)
        return 2
    try:
        if args.command == "screenshot":
            print(screenshot(args.page, args.png, args.width))
            return 0
        layout = measure(args.page, args.width)
    except BrowserError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    problems = layout.overflows() + layout.shrunk() + layout.broken_words()
    for line in problems:
        print(line)
    print(
        f"{args.page}: {layout.scroll_width:.0f} px wide in a {layout.viewport:.0f} px window, {len(layout.items)} tables "
        f"and figures, smallest table font {layout.smallest_table_font} px: {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
