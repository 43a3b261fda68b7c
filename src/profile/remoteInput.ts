import type { CDPSession } from "puppeteer-core";

/**
 * Input from the interactive page, replayed in the remote tab through CDP Input.*: a click on the picture
 * becomes a click at the same place in the page (coordinates in the page's CSS pixels), a key a key.
 */
export type RemoteInput =
  | { kind: "mouse"; type: "mousePressed" | "mouseReleased" | "mouseMoved"; x: number; y: number; button?: "left" | "middle" | "right" | "none"; clickCount?: number; modifiers?: number }
  | { kind: "wheel"; x: number; y: number; deltaX: number; deltaY: number; modifiers?: number }
  | { kind: "key"; type: "keyDown" | "keyUp"; key: string; code?: string; keyCode?: number; text?: string; modifiers?: number }
  | { kind: "text"; text: string };

const MOUSE_TYPES = new Set(["mousePressed", "mouseReleased", "mouseMoved"]);
const BUTTONS = new Set(["left", "middle", "right", "none"]);

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const short = (v: unknown, max: number): v is string => typeof v === "string" && v.length <= max;

/** The input a POSTed JSON value describes, or null when it is not one. */
export function parseRemoteInput(value: unknown): RemoteInput | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  const modifiers = finite(v.modifiers) ? v.modifiers & 15 : 0;
  switch (v.kind) {
    case "mouse":
      if (!MOUSE_TYPES.has(String(v.type)) || !finite(v.x) || !finite(v.y)) return null;
      return {
        kind: "mouse", type: v.type as "mousePressed", x: v.x, y: v.y, modifiers,
        button: BUTTONS.has(String(v.button)) ? (v.button as "left") : v.type === "mouseMoved" ? "none" : "left",
        clickCount: finite(v.clickCount) ? Math.min(3, Math.max(0, Math.round(v.clickCount))) : v.type === "mouseMoved" ? 0 : 1,
      };
    case "wheel":
      if (!finite(v.x) || !finite(v.y) || !finite(v.deltaX) || !finite(v.deltaY)) return null;
      return { kind: "wheel", x: v.x, y: v.y, deltaX: v.deltaX, deltaY: v.deltaY, modifiers };
    case "key":
      if ((v.type !== "keyDown" && v.type !== "keyUp") || !short(v.key, 32)) return null;
      return {
        kind: "key", type: v.type, key: v.key, modifiers,
        ...(short(v.code, 32) ? { code: v.code } : {}),
        ...(finite(v.keyCode) ? { keyCode: v.keyCode } : {}),
        ...(short(v.text, 4) && v.text ? { text: v.text } : {}),
      };
    case "text":
      return short(v.text, 10_000) ? { kind: "text", text: v.text } : null;
    default:
      return null;
  }
}

/** Replay one input in the tab of `cdp`. */
export async function dispatchRemoteInput(cdp: CDPSession, input: RemoteInput): Promise<void> {
  switch (input.kind) {
    case "mouse":
      await cdp.send("Input.dispatchMouseEvent", { type: input.type, x: input.x, y: input.y, button: input.button, clickCount: input.clickCount, modifiers: input.modifiers });
      return;
    case "wheel":
      await cdp.send("Input.dispatchMouseEvent", { type: "mouseWheel", x: input.x, y: input.y, deltaX: input.deltaX, deltaY: input.deltaY, modifiers: input.modifiers });
      return;
    case "key": {
      // A key with text (a character, Enter) types it; others (arrows, Backspace) are raw key presses.
      const type = input.type === "keyUp" ? "keyUp" : input.text ? "keyDown" : "rawKeyDown";
      await cdp.send("Input.dispatchKeyEvent", {
        type, key: input.key, code: input.code, modifiers: input.modifiers,
        windowsVirtualKeyCode: input.keyCode, nativeVirtualKeyCode: input.keyCode,
        ...(type === "keyDown" ? { text: input.text, unmodifiedText: input.text } : {}),
      });
      return;
    }
    case "text":
      await cdp.send("Input.insertText", { text: input.text });
  }
}
