// The TypeScript client against a live Mnemo (node --test). The suite starts the server and
// sets MNEMO_BASE_URL, MNEMO_API_KEY, MNEMO_SCHEMA (the live schema as JSON) and
// MNEMO_TEST_EXPORT (a ChatGPT export to import).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { Mnemo, MnemoError, OPERATIONS } from "../dist/index.js";

const mnemo = new Mnemo({ timeoutMs: 20_000 });

test("every operation the client calls is in the live schema", async () => {
  const schema = JSON.parse(await readFile(process.env.MNEMO_SCHEMA, "utf8"));
  const missing = Object.entries(OPERATIONS).filter(
    ([, [method, path]]) => !schema.paths[path]?.[method.toLowerCase()],
  );
  assert.deepEqual(missing, []);
});

test("a scripted session: open, chat, commit, search, import and wait, delete", async () => {
  const session = await mnemo.sessions.create({ title: "Garden" });
  const events = [];
  for await (const event of mnemo.chatStream(
    [{ role: "user", content: "My neighbour Ines grows chili peppers on her balcony." }],
    { sessionId: session.session_id },
  )) {
    events.push(event);
  }
  assert.equal(events.at(-1).event, "done");
  assert.ok(events.some((event) => event.event === "message"));
  await mnemo.sessions.heartbeat(session.session_id);
  const commit = await mnemo.commit(session.session_id);
  assert.ok(commit.messages_read >= 1);

  const added = await mnemo.memories.add("The user's favourite pepper is the habanero.");
  assert.equal(added.status, "added");
  await mnemo.memories.update(added.memory_id, { content: "The user's favourite pepper is the jalapeño." });
  assert.ok((await mnemo.memories.history(added.memory_id)).count >= 2);
  const found = await mnemo.memories.search("Which pepper does the user like best?", { topK: 5 });
  assert.match(found[0].content, /jalapeño/);
  assert.ok(found[0].why.length > 0);
  const logged = await mnemo.sessions.addMessage(session.session_id, { role: "user", content: "Thanks!" });
  assert.equal(logged.role, "user");

  const job = await mnemo.imports.upload(process.env.MNEMO_TEST_EXPORT);
  const done = await mnemo.imports.wait(job.import_id, { timeout: 60, intervalMs: 200 });
  assert.equal(done.status, "done");
  const again = await mnemo.imports.upload([
    { name: "conversations.json", data: new Uint8Array(await readFile(process.env.MNEMO_TEST_EXPORT)) },
  ]);
  assert.ok(again.import_id);

  await mnemo.memories.delete(added.memory_id);
  await assert.rejects(mnemo.memories.get(added.memory_id), (error) => {
    assert.ok(error instanceof MnemoError);
    assert.equal(error.status, 404);
    assert.equal(error.code, "memory_not_found");
    assert.equal(error.field, "memory_id");
    return true;
  });
  await mnemo.sessions.close(session.session_id);
});

test("mem0-style add and search, and the profile", async () => {
  const result = await mnemo.add([
    { role: "user", content: "I just adopted a tabby cat named Biscuit." },
    { role: "assistant", content: "Biscuit is a lovely name!" },
  ]);
  assert.ok(result.facts_committed >= 1);
  const found = await mnemo.search("What is my cat called?", { limit: 3 });
  assert.ok(found.items.some((item) => item.content.includes("Biscuit")));
  const profile = await mnemo.profile.get();
  assert.ok(Array.isArray(profile.instructions));
});

test("bad input is one MnemoError naming the field", async () => {
  await assert.rejects(mnemo.memories.add(""), (error) => {
    assert.equal(error.status, 400);
    assert.equal(error.field, "text");
    return true;
  });
});

test("503 is retried after Retry-After; a call that never answers times out", async () => {
  let calls = 0;
  const flaky = new Mnemo({
    baseUrl: "http://mnemo.test",
    apiKey: "key",
    fetch: async () => {
      calls += 1;
      if (calls < 3) {
        return new Response(JSON.stringify({ error: { code: "database_unavailable", message: "retry" } }), {
          status: 503,
          headers: { "retry-after": "0" },
        });
      }
      return new Response(JSON.stringify({ app_id: "default", instructions: [] }), { status: 200 });
    },
  });
  assert.equal((await flaky.profile.get()).app_id, "default");
  assert.equal(calls, 3);

  const stuck = new Mnemo({
    baseUrl: "http://mnemo.test",
    apiKey: "key",
    timeoutMs: 50,
    retries: 1,
    // A server that never answers (the open socket is what keeps a real call's process alive:
    // AbortSignal.timeout's own timer does not).
    fetch: (url, init) =>
      new Promise((_, reject) => {
        const socket = setInterval(() => {}, 1000);
        init.signal.addEventListener("abort", () => {
          clearInterval(socket);
          reject(init.signal.reason);
        });
      }),
  });
  await assert.rejects(stuck.memories.get(1), (error) => {
    assert.equal(error.code, "timeout");
    assert.equal(error.status, 0);
    return true;
  });
});
