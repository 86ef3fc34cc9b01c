// A chat loop on Recap's HTTP API, in plain Node (18+): fetch only, no dependencies.
//
//   RECAP_URL=http://127.0.0.1:8000 RECAP_API_KEY=... ANTHROPIC_API_KEY=... \
//     node examples/http/chat.mjs SESSION_ID
//
// Each line read from stdin is one user turn: it is stored in Recap, the Messages
// API request is built by Recap (/context: rolling summary, memories, the recent
// window), Claude answers, the answer is stored, and /replied lets Recap queue a
// summary when the conversation has grown. ANTHROPIC_BASE_URL (default
// https://api.anthropic.com) and RECAP_MODEL (default claude-sonnet-5-5, as in README) are optional.

import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";

const RECAP_URL = (process.env.RECAP_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const RECAP_API_KEY = process.env.RECAP_API_KEY ?? "";
const ANTHROPIC_URL = (process.env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com").replace(/\/$/, "");
const ANTHROPIC_API_KEY = process.env.ANTHROPIC_API_KEY ?? "";
const MODEL = process.env.RECAP_MODEL ?? "claude-sonnet-5-5";
const SYSTEM = "You are a concise, friendly assistant.";
const ATTEMPTS = 5;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One call to Recap. 409 (a job holds the session) and 503 (database or broker
// down) are retried after Retry-After; a POST of messages carries an
// Idempotency-Key, so a retry after a lost answer never stores the turn twice.
export async function recap(method, path, body, { idempotencyKey } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (RECAP_API_KEY) headers.Authorization = `Bearer ${RECAP_API_KEY}`;
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await fetch(`${RECAP_URL}${path}`, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      if (attempt >= ATTEMPTS) throw error;
      await sleep(500 * attempt);
      continue;
    }
    const data = await response.json();
    if (response.ok) return data;
    if ((response.status === 409 || response.status === 503) && attempt < ATTEMPTS) {
      await sleep(1000 * Number(response.headers.get("retry-after") ?? attempt));
      continue;
    }
    throw new Error(`recap ${method} ${path}: ${response.status} ${data.error?.type}: ${data.error?.message}`);
  }
}

async function claude(request) {
  const response = await fetch(`${ANTHROPIC_URL}/v1/messages`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "x-api-key": ANTHROPIC_API_KEY,
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({ model: MODEL, max_tokens: 1024, ...request }),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(`Messages API: ${response.status} ${JSON.stringify(data.error)}`);
  return data;
}

export async function reply(sessionId, userText) {
  const session = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  await recap("POST", `${session}/messages`, { role: "user", content: userText },
    { idempotencyKey: randomUUID() });
  const context = await recap("POST", `${session}/context`, { system_prompt: SYSTEM });
  const answer = await claude(context.request);
  // Stored as the content array Claude sent (text, tool_use, thinking...): replayed as is.
  await recap("POST", `${session}/messages`, { role: "assistant", content: answer.content },
    { idempotencyKey: randomUUID() });
  await recap("POST", `${session}/replied`);  // never fails for a broker outage
  return answer.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

async function main() {
  const sessionId = process.argv[2];
  if (!sessionId) {
    console.error("usage: node chat.mjs SESSION_ID  (one user turn per line on stdin)");
    process.exit(2);
  }
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const text = await reply(sessionId, line);
    console.log(`assistant: ${text.replace(/\s+/g, " ").slice(0, 200)}`);
  }
  const state = await recap("GET", `/v1/sessions/${encodeURIComponent(sessionId)}`);
  console.log(`session ${sessionId}: ${state.message_count} recent messages, summary version ` +
    `${state.summary_version} (${state.summarized_message_count} condensed)`);
}

main().catch((error) => {
  console.error(`error: ${error.message}`);
  process.exit(1);
});
