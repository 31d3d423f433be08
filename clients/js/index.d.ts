// Type declarations of plugpull's Node client (index.js); the wire format is docs/protocol.md.

export declare const SOCKET_ENV: "PLUGPULL_SOCKET";
export declare const WORKDIR_ENV: "PLUGPULL_WORKDIR";
export declare const BOUNDARIES_ENV: "PLUGPULL_BOUNDARIES";
export declare const STRICT_ENV: "PLUGPULL_STRICT";
export declare const PROTOCOL_VERSION: 1;
/** resume-after-approval: the framework refused the approval (already claimed, or nothing pending). */
export declare const REFUSED_EXIT: 3;
/** resume-after-approval: the run ended paused at an approval again instead of finished. */
export declare const PAUSED_AGAIN_EXIT: 5;
export declare const EDGES: readonly ["before", "after"];
export declare const STORE_METHODS: readonly ["get_items", "add_items", "pop_item", "clear_session"];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type Edge = "before" | "after";
export type StoreMethod = "get_items" | "add_items" | "pop_item" | "clear_session";

/** The provider's answer to an effect call. */
export interface Effect {
  name: string;
  key: string | null;
  /** false for a repeat of a known (name, key) */
  new: boolean;
  /** how many distinct effects of this name the provider now has */
  count: number;
}

/** A conversation message in the neutral form plugpull compares (docs/agent-protocol.md). */
export interface NeutralMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  tool_calls?: { id: string; name: string }[];
  tool_call_id?: string;
}

export declare class PlugpullError extends Error {}
export declare class NotInRun extends PlugpullError {}
export declare class ChannelClosed extends PlugpullError {}
export declare class RequestRejected extends PlugpullError {}

export declare function strict(): boolean;
export declare function inRun(call: string): boolean;

/** Resolves when the provider answers; at a kill point never (the process group is SIGKILLed). */
export declare function recordEffect(name: string, options?: { key?: string | null }): Promise<Effect>;
export declare function callStore(
  method: StoreMethod,
  session: string,
  args?: { items?: JsonValue[]; limit?: number | null },
): Promise<JsonValue>;
export declare function gate(): Promise<void>;
export declare function recordResult(value: JsonValue): Promise<void>;
export declare function announce(info?: Record<string, string | number>): Promise<void>;
export declare function markBoundary(name: string, edge: Edge): Promise<void>;
export declare function boundary<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
export declare function checkModelRequest(messages: NeutralMessage[]): Promise<void>;
export declare function recordConversation(messages: NeutralMessage[]): Promise<void>;
export declare function waitForCancel(): Promise<boolean>;
export declare function recordCancel(
  style: string,
  seen: { text?: string[]; tool_calls?: string[]; tool_results?: string[] },
): Promise<void>;
