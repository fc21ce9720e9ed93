// promptchat.js: a server's prompt (its messages, from prompts/get) as the
// text of a query, for the chat's input box: what VS Code and Claude
// Desktop do with an MCP prompt, which the user then reads, edits and
// sends.

// ROLE_NAMES are how a message's role reads in front of its text.
const ROLE_NAMES = { user: "User", assistant: "Assistant" };

// itemText is the text of one content item: text as it is, an embedded
// resource's text under its URI, anything else (an image, audio, a blob)
// named in brackets, as a query carries text only.
function itemText(item) {
  if (item === null || typeof item !== "object") return item === undefined || item === null ? "" : String(item);
  switch (item.type) {
    case "text":
      return typeof item.text === "string" ? item.text : "";
    case "resource":
      return typeof item.text === "string" ? `${item.uri || "resource"}:\n${item.text}` : `[resource ${item.uri || ""}]`.replace(" ]", "]");
    case "resource_link":
      return `[${item.uri || "resource link"}]`;
    default:
      return `[${item.type || "content"}${item.mime_type ? " " + item.mime_type : ""}]`;
  }
}

// promptText joins messages into one text: the user's messages as they
// are, one paragraph each; when other roles speak too, each message starts
// with its role ("User:", "Assistant:").
export function promptText(messages) {
  const msgs = (Array.isArray(messages) ? messages : []).filter((m) => m && typeof m === "object");
  const mixed = msgs.some((m) => m.role !== "user");
  return msgs.map((m) => {
    const text = itemText(m.content).trim();
    return mixed ? `${ROLE_NAMES[m.role] || m.role || "Message"}: ${text}` : text;
  }).filter((t) => t !== "").join("\n\n");
}
