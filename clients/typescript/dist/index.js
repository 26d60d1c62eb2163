/** Every operation the client calls, by name: the test compares them with the live schema. */
export const OPERATIONS = {
    "sessions.new": ["POST", "/api/v1/chat/new"],
    "sessions.heartbeat": ["POST", "/api/v1/chat/heartbeat"],
    "sessions.close": ["POST", "/api/v1/chat/close"],
    "sessions.message": ["POST", "/api/v1/chat/messages"],
    "sessions.list": ["GET", "/api/v1/chat/sessions"],
    "sessions.get": ["GET", "/api/v1/chat/sessions/{session_id}"],
    "chat.stream": ["POST", "/api/v1/ai/chat/stream"],
    "memory.commit": ["POST", "/api/v1/memory/commit"],
    "memories.add": ["POST", "/api/v1/memories"],
    "memories.list": ["GET", "/api/v1/memories"],
    "memories.get": ["GET", "/api/v1/memories/{memory_id}"],
    "memories.update": ["PATCH", "/api/v1/memories/{memory_id}"],
    "memories.delete": ["DELETE", "/api/v1/memories/{memory_id}"],
    "memories.history": ["GET", "/api/v1/memories/{memory_id}/history"],
    search: ["POST", "/api/v1/memory/search"],
    "imports.upload": ["POST", "/api/v1/imports"],
    "imports.get": ["GET", "/api/v1/imports/{import_id}"],
    "entities.list": ["GET", "/api/v1/entities"],
    "entities.get": ["GET", "/api/v1/entities/{entity_id}"],
    "entities.merge": ["POST", "/api/v1/entities/merge"],
    "profile.get": ["GET", "/api/v1/profile"],
    "profile.update": ["PATCH", "/api/v1/profile"],
    "webhooks.create": ["POST", "/api/v1/webhooks"],
    "webhooks.list": ["GET", "/api/v1/webhooks"],
    "webhooks.delete": ["DELETE", "/api/v1/webhooks/{endpoint_id}"],
    "me.export": ["GET", "/api/v1/me/export"],
    "me.erase": ["DELETE", "/api/v1/me"],
};
/** An error answer of Mnemo (`{"error": {code, message, field}}`) or a request that got none
 * (`status` 0: a timeout, a refused connection). */
export class MnemoError extends Error {
    status;
    code;
    field;
    constructor(status, code, message, field = null) {
        super(`${status} ${code}: ${message}${field ? ` (field ${field})` : ""}`);
        this.status = status;
        this.code = code;
        this.field = field;
        this.name = "MnemoError";
    }
}
const RETRY_STATUSES = new Set([502, 503, 504]);
const TERMINAL_IMPORT = new Set(["done", "partial", "failed"]);
/** A file's bytes through Node's fs (a path is a Node-only way to name a file). */
async function readFileBytes(path) {
    const fsModule = "node:fs/promises"; // not resolved at build time: no @types/node needed
    const fs = (await import(fsModule));
    return fs.readFile(path);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
function clean(values) {
    return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}
async function errorOf(response) {
    const text = await response.text();
    try {
        const body = JSON.parse(text);
        if (body.error) {
            return new MnemoError(response.status, body.error.code ?? "error", body.error.message ?? text, body.error.field ?? null);
        }
    }
    catch {
        /* not JSON */
    }
    return new MnemoError(response.status, "http_error", text.slice(0, 500) || `HTTP ${response.status}`);
}
/** Server-sent events from a streamed body. */
async function* sseEvents(body) {
    const decoder = new TextDecoder();
    let buffer = "";
    let name = "message";
    let data = [];
    const reader = body.getReader();
    const flush = () => {
        const event = data.length ? { event: name, data: JSON.parse(data.join("\n")) } : null;
        name = "message";
        data = [];
        return event;
    };
    for (;;) {
        const { value, done } = await reader.read();
        buffer += decoder.decode(value, { stream: !done });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
            const line = buffer.slice(0, newline).replace(/\r$/, "");
            buffer = buffer.slice(newline + 1);
            if (line === "") {
                const event = flush();
                if (event)
                    yield event;
            }
            else if (line.startsWith("event:")) {
                name = line.slice(6).trim();
            }
            else if (line.startsWith("data:")) {
                data.push(line.slice(5).trim());
            }
        }
        if (done)
            break;
    }
    const last = flush();
    if (last)
        yield last;
}
export class Mnemo {
    baseUrl;
    endUserHeader;
    apiKey;
    timeoutMs;
    retries;
    endUser;
    fetcher;
    constructor(options = {}) {
        // Node's environment when there is one (the client also runs where there is none).
        const env = globalThis.process?.env ?? {};
        this.baseUrl = (options.baseUrl ?? env.MNEMO_BASE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
        const apiKey = options.apiKey ?? env.MNEMO_API_KEY;
        if (!apiKey)
            throw new Error("Give apiKey or set MNEMO_API_KEY (manage.py issue_token USERNAME).");
        this.apiKey = apiKey;
        this.timeoutMs = options.timeoutMs ?? 30_000;
        this.retries = options.retries ?? 4;
        this.endUser = options.endUser;
        this.endUserHeader = options.endUserHeader ?? "X-OpenWebUI-User-Id";
        this.fetcher = options.fetch ?? fetch;
    }
    url(call) {
        let path = call.path;
        for (const [key, value] of Object.entries(call.pathParams ?? {})) {
            path = path.replace(`{${key}}`, encodeURIComponent(String(value)));
        }
        const query = new URLSearchParams();
        for (const [key, value] of Object.entries(call.query ?? {})) {
            if (value !== undefined && value !== null)
                query.set(key, String(value));
        }
        const search = query.toString();
        return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
    }
    async send(call) {
        const headers = {
            Authorization: `Token ${this.apiKey}`,
            Accept: call.stream ? "text/event-stream" : "application/json",
            ...(this.endUser ? { [this.endUserHeader]: this.endUser } : {}),
            ...(call.headers ?? {}),
        };
        let body;
        if (call.form)
            body = call.form;
        else if (call.json !== undefined) {
            headers["Content-Type"] = "application/json";
            body = JSON.stringify(call.json);
        }
        const read = call.method === "GET";
        for (let attempt = 0;; attempt++) {
            const last = attempt >= this.retries - 1;
            let response;
            try {
                response = await this.fetcher(this.url(call), {
                    method: call.method,
                    headers,
                    body,
                    signal: AbortSignal.timeout(this.timeoutMs),
                });
            }
            catch (error) {
                const name = error.name;
                if (!read || last) {
                    throw new MnemoError(0, name === "TimeoutError" ? "timeout" : "connection_error", String(error));
                }
                await sleep(Math.min(500 * 2 ** attempt, 30_000));
                continue;
            }
            if (!RETRY_STATUSES.has(response.status) || last)
                return response;
            const after = Number(response.headers.get("retry-after"));
            await response.body?.cancel();
            await sleep(Number.isFinite(after) && after >= 0 ? Math.min(after * 1000, 30_000) : 500 * 2 ** attempt);
        }
    }
    /** @internal The JSON of a success; MnemoError for anything else. */
    async call(call) {
        const response = await this.send(call);
        if (!response.ok)
            throw await errorOf(response);
        if (response.status === 204)
            return undefined;
        const text = await response.text();
        return (text ? JSON.parse(text) : undefined);
    }
    sessions = {
        create: (body = {}) => this.call({ method: "POST", path: "/api/v1/chat/new", json: body }),
        heartbeat: (sessionId) => this.call({
            method: "POST",
            path: "/api/v1/chat/heartbeat",
            json: { session_id: sessionId },
        }),
        close: (sessionId) => this.call({
            method: "POST",
            path: "/api/v1/chat/close",
            json: { session_id: sessionId },
        }),
        /** Log one turn (for apps that call their own model). */
        addMessage: (sessionId, turn) => this.call({
            method: "POST",
            path: "/api/v1/chat/messages",
            json: clean({ session_id: sessionId, role: turn.role, content: turn.content, model: turn.model }),
        }),
        list: (query = {}) => this.call({ method: "GET", path: "/api/v1/chat/sessions", query }),
        get: (sessionId) => this.call({
            method: "GET",
            path: "/api/v1/chat/sessions/{session_id}",
            pathParams: { session_id: sessionId },
        }),
    };
    memories = {
        add: (text, projectId) => this.call({ method: "POST", path: "/api/v1/memories", json: clean({ text, project_id: projectId }) }),
        list: (query = {}) => this.call({ method: "GET", path: "/api/v1/memories", query }),
        get: (memoryId) => this.call({ method: "GET", path: "/api/v1/memories/{memory_id}", pathParams: { memory_id: memoryId } }),
        update: (memoryId, changes) => this.call({
            method: "PATCH",
            path: "/api/v1/memories/{memory_id}",
            pathParams: { memory_id: memoryId },
            json: changes,
        }),
        delete: (memoryId) => this.call({ method: "DELETE", path: "/api/v1/memories/{memory_id}", pathParams: { memory_id: memoryId } }),
        /** The ranked results of `search` (each with `content`, `relevance`, `why`). */
        search: async (query, options = {}) => {
            const { topK, ...rest } = options;
            return (await this.search(query, { ...rest, top_k: rest.top_k ?? topK })).items;
        },
        history: (memoryId) => this.call({
            method: "GET",
            path: "/api/v1/memories/{memory_id}/history",
            pathParams: { memory_id: memoryId },
        }),
    };
    imports = {
        /** Upload chat exports (ChatGPT, Claude, Gemini... or zips): a file path (Node), or files
         * with their bytes. Answers with the job. */
        upload: async (files, options = {}) => {
            const form = new FormData();
            for (const file of Array.isArray(files) ? files : [files]) {
                if (typeof file === "string") {
                    form.append("files", new Blob([(await readFileBytes(file))]), file.split(/[\\/]/).pop());
                    continue;
                }
                const blob = file.data instanceof Blob ? file.data : new Blob([file.data]);
                form.append("files", blob, file.name);
            }
            if (options.appId)
                form.set("app_id", options.appId);
            if (options.projectId)
                form.set("project_id", options.projectId);
            return this.call({ method: "POST", path: "/api/v1/imports", form });
        },
        get: (importId) => this.call({ method: "GET", path: "/api/v1/imports/{import_id}", pathParams: { import_id: importId } }),
        /** Poll until the job is done, partial or failed; `timeout` in seconds (default 600). */
        wait: async (importId, options = {}) => {
            const deadline = Date.now() + (options.timeout ?? 600) * 1000;
            for (;;) {
                const job = await this.imports.get(importId);
                if (TERMINAL_IMPORT.has(job.status ?? ""))
                    return job;
                if (Date.now() > deadline)
                    throw new MnemoError(0, "timeout", `import ${importId} still ${job.status}`);
                await sleep(options.intervalMs ?? 1000);
            }
        },
    };
    entities = {
        list: (query = {}) => this.call({ method: "GET", path: "/api/v1/entities", query }),
        get: (entityId) => this.call({ method: "GET", path: "/api/v1/entities/{entity_id}", pathParams: { entity_id: entityId } }),
        merge: (targetId, sourceIds) => this.call({
            method: "POST",
            path: "/api/v1/entities/merge",
            json: { target_id: targetId, source_ids: sourceIds },
        }),
    };
    profile = {
        get: (query = {}) => this.call({ method: "GET", path: "/api/v1/profile", query }),
        update: (changes) => this.call({ method: "PATCH", path: "/api/v1/profile", json: changes }),
    };
    webhooks = {
        create: (body) => this.call({ method: "POST", path: "/api/v1/webhooks", json: body }),
        list: () => this.call({ method: "GET", path: "/api/v1/webhooks" }),
        delete: (endpointId) => this.call({ method: "DELETE", path: "/api/v1/webhooks/{endpoint_id}", pathParams: { endpoint_id: endpointId } }),
    };
    me = {
        export: () => this.call({ method: "GET", path: "/api/v1/me/export" }),
        /** Erase everything Mnemo holds about the caller; `confirm` is the caller's username. */
        erase: (confirm) => this.call({ method: "DELETE", path: "/api/v1/me", json: { confirm } }),
    };
    /** Commit to Memory: distill the session's new messages into facts (exactly once). */
    commit(sessionId) {
        return this.call({ method: "POST", path: "/api/v1/memory/commit", json: { session_id: sessionId } });
    }
    /** Ranked hybrid search. `userId` acts for that end user; `limit` is `top_k` (mem0's names). */
    search(query, options = {}) {
        const { userId, limit, ...rest } = options;
        return this.call({
            method: "POST",
            path: "/api/v1/memory/search",
            json: clean({ ...rest, query, top_k: rest.top_k ?? limit }),
            headers: userId ? { [this.endUserHeader]: userId } : undefined,
        });
    }
    /** One chat turn with memory, its events as they arrive (message chunks, then done or error). */
    async *chatStream(messages, options = {}) {
        const response = await this.send({
            method: "POST",
            path: "/api/v1/ai/chat/stream",
            json: clean({ messages, session_id: options.sessionId, context_version: options.contextVersion, model: options.model }),
            stream: true,
        });
        if (!response.ok || !response.body)
            throw await errorOf(response);
        yield* sseEvents(response.body);
    }
    /** mem0's `add`: remember what these messages say (one session's turns, committed). */
    async add(messages, options = {}) {
        const headers = options.userId ? { [this.endUserHeader]: options.userId } : undefined;
        const turns = typeof messages === "string" ? [{ role: "user", content: messages }] : messages;
        const session = await this.call({
            method: "POST",
            path: "/api/v1/chat/new",
            json: clean({ metadata: options.metadata }),
            headers,
        });
        for (const turn of turns) {
            await this.call({
                method: "POST",
                path: "/api/v1/chat/messages",
                json: { session_id: session.session_id, role: turn.role, content: turn.content },
                headers,
            });
        }
        const result = await this.call({
            method: "POST",
            path: "/api/v1/memory/commit",
            json: { session_id: session.session_id },
            headers,
        });
        await this.call({ method: "POST", path: "/api/v1/chat/close", json: { session_id: session.session_id }, headers });
        return result;
    }
}
