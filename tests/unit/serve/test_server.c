/* test_server.c: the HTTP server over real loopback HTTP (libcurl), with
 * the fake engine and the shipped model's tokenizer (a byte-level one of
 * its own where a test needs one). Each test starts its own
 * server on a free 127.0.0.1 port and stops it. Covers health while
 * loading, auth in both error shapes, streamed == non-streamed text for a
 * seed, the SSE sequences of both APIs parsed event by event, body and
 * route errors, pictures (refused, each for its reason), 429 with
 * Retry-After, 8 concurrent streams, a client that disconnects mid-stream
 * freeing its slot, and /metrics. */
#include "tests/lib/test_util.h"
#include "tests/lib/byte_vocab.h"
#include "tests/lib/vocab_relabel.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "tests/lib/engine_fake.h"
#include "tests/lib/test_images.h"
#include "runtime/serve/server.h"
#include "runtime/util/strbuf.h"

#define GGUF SHIPPED_MODEL
#define CHAT "{\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story\"}]"

typedef struct fixture {
    server *s;
    engine *e;
    int     port;
} fixture;

static void start(fixture *f, const server_config *cfg, int delay_ms, bool with_engine)
{
    char err[256] = "";
    fake_engine_opts o = { .n_ctx = 512, .delay_ms = delay_ms };
    f->e = fake_engine_new(GGUF, &o, err, sizeof err);
    if (!f->e) fail_msg("%s", err);
    server_config c = *cfg;
    c.host = "127.0.0.1";
    c.port = 0;
    f->s = server_start(&c, err, sizeof err);
    if (!f->s) fail_msg("%s", err);
    f->port = server_port(f->s);
    assert_true(f->port > 0);
    if (with_engine) assert_int_equal(server_set_engine(f->s, f->e, err, sizeof err), 0);
}

/* start() with its own engine options and tokenizer GGUF */
static void start_with(fixture *f, const char *gguf, const fake_engine_opts *o)
{
    char err[256] = "";
    f->e = fake_engine_new(gguf, o, err, sizeof err);
    if (!f->e) fail_msg("%s", err);
    server_config c = { .host = "127.0.0.1", .port = 0 };
    f->s = server_start(&c, err, sizeof err);
    if (!f->s) fail_msg("%s", err);
    f->port = server_port(f->s);
    assert_int_equal(server_set_engine(f->s, f->e, err, sizeof err), 0);
}

static void stop(fixture *f)
{
    server_stop(f->s);
    fake_engine_free(f->e);
}

typedef struct reply {
    long   status;
    strbuf body, headers;
    size_t abort_after; /* > 0: hang up after this many body bytes */
} reply;

static size_t on_body(char *d, size_t sz, size_t n, void *ud)
{
    reply *r = ud;
    strbuf_add(&r->body, d, sz * n);
    if (r->abort_after && r->body.len >= r->abort_after) return 0;
    return sz * n;
}

static size_t on_header(char *d, size_t sz, size_t n, void *ud)
{
    strbuf_add(&((reply *)ud)->headers, d, sz * n);
    return sz * n;
}

/* One request (HEAD when head); the reply's strings must be freed with reply_free. */
static void http_ex(int port, const char *path, const char *body, const char *hdr, bool head, reply *r)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (hdr) h = curl_slist_append(h, hdr);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK && !(r->abort_after && rc == CURLE_WRITE_ERROR))
        fail_msg("%s: %s", path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void http(int port, const char *path, const char *body, const char *hdr, reply *r)
{
    http_ex(port, path, body, hdr, false, r);
}

static void http_head(int port, const char *path, reply *r) { http_ex(port, path, NULL, NULL, true, r); }

static void reply_free(reply *r)
{
    strbuf_free(&r->body);
    strbuf_free(&r->headers);
}

static json_t *json_of(const reply *r)
{
    json_error_t je;
    json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
    if (!j) fail_msg("not JSON (%s): %.300s", je.text, r->body.data ? r->body.data : "");
    return j;
}

static json_t *jget(json_t *j, const char *path)
{
    json_t *v = j;
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    /* strtok_r: client threads parse concurrently, and strtok's hidden
     * state made one thread's lookup return NULL under load */
    for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = (*k >= '0' && *k <= '9') ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
    return v;
}

static const char *jstr(json_t *j, const char *path) { return json_string_value(jget(j, path)); }

static long long jint(json_t *j, const char *path)
{
    json_t *v = jget(j, path);
    if (!json_is_integer(v)) fail_msg("%s: not an integer", path);
    return json_integer_value(v);
}

/* ---- SSE: split the body into events ------------------------------------ */

typedef struct sse_ev {
    char   name[64];
    char  *data;
} sse_ev;

static size_t parse_sse(const char *body, sse_ev *ev, size_t cap)
{
    size_t n = 0;
    const char *p = body;
    while (p && *p && n < cap) {
        const char *end = strstr(p, "\n\n");
        if (!end) fail_msg("unterminated SSE event: %.200s", p);
        sse_ev e = { .name = "" };
        for (const char *l = p; l < end;) {
            const char *nl = memchr(l, '\n', (size_t)(end - l));
            if (!nl) nl = end;
            if (!strncmp(l, "event: ", 7)) snprintf(e.name, sizeof e.name, "%.*s", (int)(nl - l - 7), l + 7);
            else if (!strncmp(l, "data: ", 6)) e.data = strndup(l + 6, (size_t)(nl - l - 6));
            else fail_msg("unexpected SSE line: %.*s", (int)(nl - l), l);
            l = nl + 1;
        }
        if (!e.data) fail_msg("SSE event without data");
        ev[n++] = e;
        p = end + 2;
    }
    return n;
}

static void free_sse(sse_ev *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) free(ev[i].data);
}

/* Concatenates the OpenAI chat deltas, checking the chunk sequence. */
/* The stream's content deltas concatenated; with reasoning, its
 * reasoning_content deltas too (NULL: not wanted). */
static char *openai_stream_text2(const char *body, bool usage, char fin[32], char **reasoning);

static char *openai_stream_text(const char *body, bool usage, char fin[32])
{
    return openai_stream_text2(body, usage, fin, NULL);
}

static char *openai_stream_text2(const char *body, bool usage, char fin[32], char **reasoning)
{
    sse_ev *ev = calloc(512, sizeof *ev); /* per call: clients run on several threads */
    assert_non_null(ev);
    size_t n = parse_sse(body, ev, 512);
    assert_true(n >= 3);
    assert_string_equal(ev[n - 1].data, "[DONE]");
    strbuf text = { 0 }, rs = { 0 };
    fin[0] = 0;
    size_t last = n - 1 - (usage ? 1 : 0);
    for (size_t i = 0; i < last; i++) {
        json_t *j = json_loads(ev[i].data, 0, NULL);
        assert_non_null(j);
        assert_string_equal(jstr(j, "object"), "chat.completion.chunk");
        json_t *d = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
        const char *fr = jstr(j, "choices.0.finish_reason");
        if (i == 0) assert_string_equal(jstr(d, "role"), "assistant");
        if (i == last - 1) { assert_non_null(fr); snprintf(fin, 32, "%s", fr); }
        else assert_null(fr);
        if (jstr(d, "content")) strbuf_puts(&text, jstr(d, "content"));
        if (jstr(d, "reasoning_content")) strbuf_puts(&rs, jstr(d, "reasoning_content"));
        json_decref(j);
    }
    if (reasoning) {
        *reasoning = strbuf_take(&rs);
        if (!*reasoning) *reasoning = strdup("");
    }
    strbuf_free(&rs);
    if (usage) {
        json_t *j = json_loads(ev[n - 2].data, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_array_size(json_object_get(j, "choices")), 0);
        assert_true(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")) > 0);
        json_decref(j);
    }
    free_sse(ev, n);
    free(ev);
    return strbuf_take(&text);
}

/* The text of story 0's first k tokens as engine e replays them (a prefix
 * of the story, after the SentencePiece space its first piece carries). */
static char *story_head(engine *e, size_t k)
{
    const char *story = fake_engine_story(0);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(e->tokenize(e->self, story, strlen(story), false, &ids, &n), 0);
    assert_true(n > k);
    strbuf b = { 0 };
    char piece[256];
    for (size_t i = 0; i < k; i++) {
        const int len = e->piece(e->self, ids[i], piece, sizeof piece);
        assert_true(len >= 0 && (size_t)len < sizeof piece);
        strbuf_add(&b, piece, (size_t)len);
    }
    free(ids);
    char *head = strbuf_take(&b);
    assert_true(head && head[0] == ' ' && head[1] && !strncmp(head + 1, story, strlen(head + 1)));
    return head;
}

/* ---- tests --------------------------------------------------------------- */

static void test_health_while_loading(void **st)
{
    (void)st;
    fixture f;
    server_config c = { 0 };
    start(&f, &c, 0, false);
    reply r = { 0 };
    http(f.port, "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 503);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT "}", NULL, &r);
    assert_int_equal(r.status, 503);
    reply_free(&r);
    char err[256];
    assert_int_equal(server_set_engine(f.s, f.e, err, sizeof err), 0);
    r = (reply){ 0 };
    http(f.port, "/health", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    /* / is the chat page (200, as clients' reachability checks want; --no-webui: /health's
     * answer, tests/e2e/e2e_webui.sh), and HEAD as GET without a body (Claude Code checks HEAD /) */
    r = (reply){ 0 };
    http(f.port, "/", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body.data, "<title>strata</title>"));
    reply_free(&r);
    r = (reply){ 0 };
    http_head(f.port, "/", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, 0);
    reply_free(&r);
    r = (reply){ 0 };
    http_head(f.port, "/v1/models", &r);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    r = (reply){ 0 };
    http_head(f.port, "/v1/messages", &r);
    assert_int_equal(r.status, 405);
    reply_free(&r);
    stop(&f);
}

static void test_auth(void **st)
{
    (void)st;
    fixture f;
    server_config c = { .api_key = "sekret" };
    start(&f, &c, 0, true);
    reply r = { 0 };
    http(f.port, "/v1/models", NULL, NULL, &r);
    assert_int_equal(r.status, 401);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "error.type"), "authentication_error");
    json_decref(j);
    reply_free(&r);

    r = (reply){ 0 };
    http(f.port, "/v1/messages", "{}", "x-api-key: wrong", &r);
    assert_int_equal(r.status, 401);
    j = json_of(&r);
    assert_string_equal(jstr(j, "type"), "error");
    assert_string_equal(jstr(j, "error.type"), "authentication_error");
    json_decref(j);
    reply_free(&r);

    r = (reply){ 0 };
    http(f.port, "/v1/models", NULL, "Authorization: Bearer sekret", &r);
    assert_int_equal(r.status, 200);
    j = json_of(&r);
    assert_string_equal(jstr(j, "data.0.id"), "strata-fake");
    json_decref(j);
    reply_free(&r);

    r = (reply){ 0 };
    http(f.port, "/v1/messages/count_tokens?beta=true",
         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
         "x-api-key: sekret", &r);
    assert_int_equal(r.status, 200);
    j = json_of(&r);
    assert_true(json_integer_value(json_object_get(j, "input_tokens")) > 3);
    json_decref(j);
    reply_free(&r);

    r = (reply){ 0 };
    http(f.port, "/health", NULL, NULL, &r); /* load balancers carry no key */
    assert_int_equal(r.status, 200);
    reply_free(&r);
    stop(&f);
}

static void test_openai_stream_equals_plain(void **st)
{
    (void)st;
    fixture f;
    server_config c = { 0 };
    start(&f, &c, 0, true);
    for (int seed = 1; seed <= 2; seed++) {
        char body[512];
        snprintf(body, sizeof body, CHAT ",\"seed\":%d,\"temperature\":0.7}", seed);
        reply r = { 0 };
        http(f.port, "/v1/chat/completions", body, NULL, &r);
        assert_int_equal(r.status, 200);
        json_t *j = json_of(&r);
        char *plain = strdup(jstr(j, "choices.0.message.content"));
        assert_string_equal(jstr(j, "choices.0.finish_reason"), "stop");
        assert_string_equal(plain + 1, fake_engine_story(fake_engine_story_for(0.7f, (unsigned)seed)));
        json_t *u = json_object_get(j, "usage");
        assert_int_equal(json_integer_value(json_object_get(u, "total_tokens")),
                         json_integer_value(json_object_get(u, "prompt_tokens")) +
                         json_integer_value(json_object_get(u, "completion_tokens")));
        json_decref(j);
        reply_free(&r);

        snprintf(body, sizeof body,
                 CHAT ",\"seed\":%d,\"temperature\":0.7,\"stream\":true,\"stream_options\":{\"include_usage\":true}}", seed);
        r = (reply){ 0 };
        http(f.port, "/v1/chat/completions", body, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.headers.data, "text/event-stream"));
        char fin[32];
        char *streamed = openai_stream_text(r.body.data, true, fin);
        assert_string_equal(streamed, plain);
        assert_string_equal(fin, "stop");
        free(streamed);
        free(plain);
        reply_free(&r);
    }
    /* stop strings and max_tokens through HTTP */
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"temperature\":0,\"stop\":[\"Spot\"],\"stream\":true}", NULL, &r);
    char fin[32];
    char *t = openai_stream_text(r.body.data, false, fin);
    assert_string_equal(t, " Once upon a time, there was a little dog named ");
    assert_string_equal(fin, "stop");
    free(t);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"temperature\":0,\"max_tokens\":4,\"logprobs\":true,\"top_logprobs\":2}", NULL, &r);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "length");
    json_t *lp = json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "logprobs"), "content");
    assert_int_equal(json_array_size(lp), 4);
    assert_int_equal(json_array_size(json_object_get(json_array_get(lp, 0), "top_logprobs")), 2);
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":3,\"temperature\":0}", NULL, &r);
    assert_int_equal(r.status, 200);
    j = json_of(&r);
    char *head = story_head(f.e, 3);
    assert_string_equal(jstr(j, "choices.0.text"), head);
    free(head);
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* A greedy chat through the OpenAI API, plain then streamed (the same
 * text and reasoning both ways): its content, reasoning_content ("" when
 * none) and completion tokens. */
static void openai_chat_both(int port, char **content, char **reasoning, json_int_t *completion)
{
    reply r = { 0 };
    http(port, "/v1/chat/completions", CHAT ",\"temperature\":0}", NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    const char *rc = jstr(j, "choices.0.message.reasoning_content");
    *content = strdup(jstr(j, "choices.0.message.content"));
    *reasoning = strdup(rc ? rc : "");
    *completion = json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens"));
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(port, "/v1/chat/completions", CHAT ",\"temperature\":0,\"stream\":true}", NULL, &r);
    char fin[32], *sreason;
    char *streamed = openai_stream_text2(r.body.data, false, fin, &sreason);
    assert_string_equal(streamed, *content);
    assert_string_equal(sreason, *reasoning);
    free(streamed);
    free(sreason);
    reply_free(&r);
}

/* The same greedy chat through the Anthropic API: without thinking the
 * content alone; with thinking enabled a thinking block (the reasoning)
 * then the text, plain, and streamed as thinking_delta events at index 0,
 * its stop, then the text block at index 1. */
static void anthropic_chat_both(int port, const char *content, const char *reasoning)
{
    static const char MSG[] = "{\"model\":\"m\",\"max_tokens\":100,\"temperature\":0,%s\"messages\":[{\"role\":"
                              "\"user\",\"content\":\"Hi\"}]}";
    char body[512];
    snprintf(body, sizeof body, MSG, "");
    reply r = { 0 };
    http(port, "/v1/messages", body, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "content.0.text"), content);
    assert_int_equal(json_array_size(json_object_get(j, "content")), 1);
    json_decref(j);
    reply_free(&r);
    snprintf(body, sizeof body, MSG, "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},");
    r = (reply){ 0 };
    http(port, "/v1/messages", body, NULL, &r);
    assert_int_equal(r.status, 200);
    j = json_of(&r);
    assert_string_equal(jstr(j, "content.0.type"), "thinking");
    assert_string_equal(jstr(j, "content.0.thinking"), reasoning);
    assert_string_equal(jstr(j, "content.1.type"), "text");
    assert_string_equal(jstr(j, "content.1.text"), content);
    json_decref(j);
    reply_free(&r);
    snprintf(body, sizeof body, MSG, "\"stream\":true,\"thinking\":{\"type\":\"enabled\"},");
    r = (reply){ 0 };
    http(port, "/v1/messages", body, NULL, &r);
    assert_int_equal(r.status, 200);
    sse_ev *ev = calloc(512, sizeof *ev);
    assert_non_null(ev);
    const size_t ne = parse_sse(r.body.data, ev, 512);
    strbuf th = { 0 }, tx = { 0 };
    int phase = 0; /* 0 thinking open, 1 thinking closed, 2 text open, 3 text closed */
    for (size_t i = 0; i < ne; i++) {
        json_t *e = json_loads(ev[i].data, 0, NULL);
        assert_non_null(e);
        const char *type = jstr(e, "type");
        const json_int_t idx = json_integer_value(json_object_get(e, "index"));
        if (!strcmp(type, "content_block_start")) {
            assert_string_equal(jstr(e, "content_block.type"), idx == 0 ? "thinking" : "text");
            if (idx == 1) { assert_int_equal(phase, 1); phase = 2; }
        } else if (!strcmp(type, "content_block_delta")) {
            if (idx == 0) { assert_int_equal(phase, 0); strbuf_puts(&th, jstr(e, "delta.thinking")); }
            else { assert_int_equal(phase, 2); strbuf_puts(&tx, jstr(e, "delta.text")); }
        } else if (!strcmp(type, "content_block_stop")) {
            phase = idx == 0 ? 1 : 3;
        }
        json_decref(e);
    }
    assert_int_equal(phase, 3);
    assert_string_equal(th.data ? th.data : "", reasoning);
    assert_string_equal(tx.data ? tx.data : "", content);
    strbuf_free(&th);
    strbuf_free(&tx);
    free_sse(ev, ne);
    free(ev);
    reply_free(&r);
}

/* /v1/completions keeps the raw text: it must hold `what`. */
static void raw_completion_holds(int port, const char *what)
{
    reply r = { 0 };
    http(port, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":100,\"temperature\":0}", NULL, &r);
    json_t *j = json_of(&r);
    assert_non_null(strstr(jstr(j, "choices.0.text"), what));
    json_decref(j);
    reply_free(&r);
}

/* gpt-oss through the server: a vocabulary with harmony's markers (on the
 * shipped model's spare byte tokens), the template detected by <|channel|>,
 * a turn of analysis then the final answer. Chat answers (both APIs,
 * streamed or not) are the final channel's text, the analysis their
 * reasoning, the whole turn counted; /v1/completions keeps the raw text.
 * Greedy throughout: the fake engine replays the script only as its greedy
 * story. */
/* The shipped model's vocabulary with harmony's markers as control tokens, in a
 * scratch folder (*dir, removed by drop_dir); the GGUF's path into gg. */
static void harmony_vocab(char **dir, char *gg, size_t n)
{
    char err[256];
    *dir = make_scratch_dir();
    assert_non_null(*dir);
    snprintf(gg, n, "%s/harmony.gguf", *dir);
    static const char *const MARK[] = { "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>",
                                        "<|constrain|>" };
    if (vocab_relabel(GGUF, gg, 3, MARK, 7, err, sizeof err)) fail_msg("%s", err);
}

static void drop_dir(char *dir)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void test_gpt_oss_harmony(void **st)
{
    (void)st;
    char *dir, gg[4200];
    harmony_vocab(&dir, gg, sizeof gg);
    fake_engine_opts o = {
        .n_ctx = 512, .chat_template = "{{ '<|start|>' + role + '<|channel|>' }}",
        .script = "<|channel|>analysis<|message|>The dog wants a ball.<|end|><|start|>assistant<|channel|>final"
                  "<|message|>Spot found the ball.",
    };
    fixture f;
    start_with(&f, gg, &o);
    char *plain, *reason;
    json_int_t completion;
    openai_chat_both(f.port, &plain, &reason, &completion);
    assert_non_null(strstr(plain, "Spot found the ball."));
    assert_null(strstr(plain, "dog"));
    assert_null(strstr(plain, "final"));
    assert_true(completion > 20); /* the analysis and the markers count */
    assert_non_null(strstr(reason, "The dog wants a ball."));
    assert_null(strstr(reason, "Spot"));
    anthropic_chat_both(f.port, plain, reason);
    raw_completion_holds(f.port, "The dog wants a ball.");
    free(plain);
    free(reason);
    stop(&f);
    drop_dir(dir);
}

/* A model that reasons in <think>...</think> (DeepSeek-R1, Qwen3): chats
 * answer the text after </think> and return the rest as the reasoning
 * (both APIs, streamed or not); /v1/completions keeps it all. */
static void test_think_reasoning(void **st)
{
    (void)st;
    fake_engine_opts o = { .n_ctx = 512, .script = "<think>\nThe dog wants a ball.\n</think>\n\nSpot found the ball." };
    fixture f;
    start_with(&f, GGUF, &o);
    char *plain, *reason;
    json_int_t completion;
    openai_chat_both(f.port, &plain, &reason, &completion);
    assert_string_equal(plain, "Spot found the ball.");
    assert_non_null(strstr(reason, "The dog wants a ball."));
    assert_null(strstr(reason, "think"));
    anthropic_chat_both(f.port, plain, reason);
    raw_completion_holds(f.port, "</think>");
    free(plain);
    free(reason);
    stop(&f);
}

/* Tool calls (Qwen3's format, tool_calls.h): the fake engine writes its
 * reasoning, a sentence and two calls. With tools offered, both APIs answer
 * the sentence as content and the calls as calls (OpenAI tool_calls with
 * finish_reason "tool_calls", streamed as deltas; Anthropic tool_use blocks
 * with stop_reason "tool_use", streamed as input_json_delta); without
 * tools the same answer is plain text; a template with no tool format
 * refuses tools with a 400 naming the field. */
#define QWEN3_TOOL_MARKERS "<|im_start|>{%- if tool_call.arguments is string %}{{- '<tool_call>\\n{\"name\": \"' }}" \
                           "{%- set ns = namespace(last_query_index=0) %}{{ ns.last_query_index }}<tool_response>"
#define TOOL_ANSWER "<think>\nLook it up.\n</think>\n\nI will check.\n<tool_call>\n{\"name\": \"get_weather\", " \
                    "\"arguments\": {\"city\":\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"
#define TOOLS ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}," \
              "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],\"temperature\":0"
#define ATOOLS ",\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\"}},{\"name\":\"now\"," \
               "\"input_schema\":{}}],\"temperature\":0"

/* Both APIs, plain and streamed, on an answer that calls get_weather and
 * now after the given content (NULL: none) and reasoning. */
static void expect_tool_answers(int port, const char *content, const char *reasoning)
{
    static const char *const names[2] = { "get_weather", "now" }, *const args[2] = { "{\"city\": \"Paris\"}", "{}" };
    reply r = { 0 };
    http(port, "/v1/chat/completions", CHAT TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "tool_calls");
    json_t *msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    if (content) assert_string_equal(jstr(j, "choices.0.message.content"), content);
    else assert_true(json_is_null(json_object_get(msg, "content")));
    if (*reasoning) assert_string_equal(jstr(j, "choices.0.message.reasoning_content"), reasoning);
    else assert_null(jstr(j, "choices.0.message.reasoning_content"));
    json_t *calls = json_object_get(msg, "tool_calls");
    assert_int_equal(json_array_size(calls), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *c = json_array_get(calls, i);
        assert_string_equal(jstr(c, "type"), "function");
        assert_string_equal(jstr(c, "function.name"), names[i]);
        assert_string_equal(jstr(c, "function.arguments"), args[i]);
        /* ours, or the model's own (Kimi K2's functions.NAME:IDX) */
        assert_true(!strncmp(jstr(c, "id"), "call_", 5) || !strncmp(jstr(c, "id"), "functions.", 10));
    }
    assert_true(strcmp(jstr(json_array_get(calls, 0), "id"), jstr(json_array_get(calls, 1), "id")));
    json_decref(j);
    reply_free(&r);

    /* streamed: the same content, the calls as indexed deltas, then the finish */
    r = (reply){ 0 };
    http(port, "/v1/chat/completions", CHAT TOOLS ",\"stream\":true}", NULL, &r);
    char fin[32];
    char *streamed = openai_stream_text(r.body.data, false, fin);
    assert_string_equal(streamed, content ? content : "");
    assert_string_equal(fin, "tool_calls");
    free(streamed);
    sse_ev *ev = calloc(512, sizeof *ev);
    assert_non_null(ev);
    size_t n = parse_sse(r.body.data, ev, 512), seen = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        json_t *c = json_loads(ev[i].data, 0, NULL);
        json_t *tc = json_object_get(json_object_get(json_array_get(json_object_get(c, "choices"), 0), "delta"), "tool_calls");
        for (size_t k = 0; k < json_array_size(tc); k++, seen++) {
            json_t *t = json_array_get(tc, k);
            assert_int_equal(json_integer_value(json_object_get(t, "index")), (json_int_t)seen);
            assert_string_equal(jstr(t, "function.name"), names[seen]);
            assert_string_equal(jstr(t, "function.arguments"), args[seen]);
        }
        json_decref(c);
    }
    assert_int_equal(seen, 2);
    free_sse(ev, n);
    reply_free(&r);

    /* Anthropic: a text block (when there is text), then tool_use blocks with parsed input */
    static const char AM[] = "{\"max_tokens\":600,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]" ATOOLS;
    char body[1024];
    snprintf(body, sizeof body, "%s}", AM);
    r = (reply){ 0 };
    http(port, "/v1/messages", body, NULL, &r);
    assert_int_equal(r.status, 200);
    j = json_of(&r);
    assert_string_equal(jstr(j, "stop_reason"), "tool_use");
    size_t t0 = content ? 1 : 0;
    char path[64];
    assert_int_equal(json_array_size(json_object_get(j, "content")), t0 + 2);
    if (content) assert_string_equal(jstr(j, "content.0.text"), content);
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "content.%zu.type", t0 + i);
        assert_string_equal(jstr(j, path), "tool_use");
        snprintf(path, sizeof path, "content.%zu.name", t0 + i);
        assert_string_equal(jstr(j, path), names[i]);
        snprintf(path, sizeof path, "content.%zu.id", t0 + i);
        assert_true(!strncmp(jstr(j, path), "toolu_", 6) || !strncmp(jstr(j, path), "functions.", 10));
        json_t *in = json_object_get(json_array_get(json_object_get(j, "content"), t0 + i), "input");
        char *in_text = json_dumps(in, JSON_COMPACT);
        assert_string_equal(in_text, i ? "{}" : "{\"city\":\"Paris\"}");
        free(in_text);
    }
    json_decref(j);
    reply_free(&r);

    snprintf(body, sizeof body, "%s,\"stream\":true}", AM);
    r = (reply){ 0 };
    http(port, "/v1/messages", body, NULL, &r);
    n = parse_sse(r.body.data, ev, 512);
    strbuf text = { 0 }, input = { 0 };
    int tool_blocks = 0, open_index = -1;
    char stop_reason[32] = "";
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_loads(ev[i].data, 0, NULL);
        assert_non_null(e);
        if (!strcmp(ev[i].name, "content_block_start")) {
            open_index = (int)json_integer_value(json_object_get(e, "index"));
            if (!strcmp(jstr(e, "content_block.type"), "tool_use")) {
                assert_int_equal(open_index, 1 + tool_blocks);
                assert_string_equal(jstr(e, "content_block.name"), names[tool_blocks]);
                tool_blocks++;
            }
        } else if (!strcmp(ev[i].name, "content_block_delta")) {
            assert_int_equal(json_integer_value(json_object_get(e, "index")), open_index);
            if (!strcmp(jstr(e, "delta.type"), "text_delta")) strbuf_puts(&text, jstr(e, "delta.text"));
            else {
                assert_string_equal(jstr(e, "delta.type"), "input_json_delta");
                strbuf_puts(&input, jstr(e, "delta.partial_json"));
            }
        } else if (!strcmp(ev[i].name, "message_delta")) {
            snprintf(stop_reason, sizeof stop_reason, "%s", jstr(e, "delta.stop_reason"));
        }
        json_decref(e);
    }
    assert_int_equal(tool_blocks, 2);
    assert_string_equal(stop_reason, "tool_use");
    char *t = strbuf_take(&text), *in = strbuf_take(&input);
    assert_string_equal(t, content ? content : "");
    assert_string_equal(in, "{\"city\": \"Paris\"}{}");
    free(t);
    free(in);
    free_sse(ev, n);
    free(ev);
    reply_free(&r);
}

/* A server on the fake engine whose template has a tool format (its
 * markers) and whose answer is script. */
static void start_tools(fixture *f, const char *tmpl, const char *script)
{
    fake_engine_opts o = { .n_ctx = 4096, .script = script, .chat_template = tmpl };
    start_with(f, GGUF, &o);
}

/* JSON mode: a request's response_format json_object holds the answer to one
 * JSON object. The fake engine answers its script's token when the mask
 * allows it, else the lowest allowed id (a blank here), so a script that
 * opens with prose still comes out as the object, and the turn ends when
 * it closes; with a reasoning block first, the constraint starts after it. */
static json_t *json_answer(int port, const char *extra, char **content, char **reasoning)
{
    char body[512];
    snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"temperature\":0,"
                                "\"max_tokens\":100%s}", extra);
    reply r = { 0 };
    http(port, "/v1/chat/completions", body, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    const char *rc = jstr(j, "choices.0.message.reasoning_content");
    *content = strdup(jstr(j, "choices.0.message.content"));
    *reasoning = strdup(rc ? rc : "");
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "stop");
    json_decref(j);
    reply_free(&r);
    return json_loads(*content, 0, NULL);
}

static void test_json_mode(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, QWEN3_TOOL_MARKERS, "Sure! Here it is: {\"answer\": 42, \"ok\": true} Anything else?");
    char *content, *reasoning;
    json_t *v = json_answer(f.port, ",\"response_format\":{\"type\":\"json_object\"}", &content, &reasoning);
    if (!json_is_object(v)) fail_msg("not a JSON object: [%s]", content);
    assert_int_equal(json_integer_value(json_object_get(v, "answer")), 42);
    assert_true(json_is_true(json_object_get(v, "ok")));
    assert_null(strstr(content, "Anything")); /* the turn ended as the object closed */
    json_decref(v);
    free(content);
    free(reasoning);
    /* without it, the script as it is */
    v = json_answer(f.port, "", &content, &reasoning);
    assert_null(v);
    assert_non_null(strstr(content, "Sure! Here it is"));
    free(content);
    free(reasoning);
    /* streamed: the same object, delta by delta */
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"temperature\":0,\"stream\":true,\"response_format\":{\"type\":\"json_object\"}}",
         NULL, &r);
    char fin[32], *sreason;
    char *streamed = openai_stream_text2(r.body.data, false, fin, &sreason);
    v = json_loads(streamed, 0, NULL);
    assert_true(json_is_object(v) && json_integer_value(json_object_get(v, "answer")) == 42);
    json_decref(v);
    free(streamed);
    free(sreason);
    reply_free(&r);
    /* a format of another type is refused, naming the field */
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"response_format\":{\"type\":\"yaml\"}}", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "response_format"));
    reply_free(&r);
    stop(&f);
    /* reasoning first (Qwen3 Thinking-2507's prompt ends in <think>): free until </think>, then the object */
    start_tools(&f, "<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }} tool_call.arguments is string ns.last_query_index "
                    "<tool_response> {{- '<|im_start|>assistant\\n<think>\\n' }}",
                "Plain words, {not JSON.</think>\n\nThe answer: {\"answer\": 7}");
    v = json_answer(f.port, ",\"response_format\":{\"type\":\"json_object\"}", &content, &reasoning);
    assert_string_equal(reasoning, "Plain words, {not JSON.");
    if (!json_is_object(v) || json_integer_value(json_object_get(v, "answer")) != 7) fail_msg("[%s]", content);
    json_decref(v);
    free(content);
    free(reasoning);
    stop(&f);
}

static void test_tool_calls(void **st)
{
    (void)st;
    fake_engine_opts o = { .n_ctx = 4096, .script = TOOL_ANSWER, .chat_template = QWEN3_TOOL_MARKERS };
    fixture f;
    start_with(&f, GGUF, &o);
    expect_tool_answers(f.port, "I will check.", "Look it up.");

    /* no tools offered: the answer is text, calls and all */
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"temperature\":0}", NULL, &r);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "stop");
    assert_non_null(strstr(jstr(j, "choices.0.message.content"), "<tool_call>\n{\"name\": \"now\""));
    assert_null(json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message"), "tool_calls"));
    json_decref(j);
    reply_free(&r);
    stop(&f);

    /* a template without a tool format: tools refused, naming the field */
    o.chat_template = "{{ '<|im_start|>' + message.role }}";
    start_with(&f, GGUF, &o);
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 400);
    j = json_of(&r);
    assert_string_equal(jstr(j, "error.param"), "tools");
    assert_non_null(strstr(jstr(j, "error.message"), "no tool format"));
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* The Responses API on the same answer: a reasoning item, a message item
 * and two function_call items, plain and streamed (the event sequence,
 * sequence numbers in order, the text deltas adding up to the done text,
 * the last event's response equal to the plain one but for ids); cut by
 * max_output_tokens it is "incomplete"; errors in OpenAI's shape. */
#define RTOOLS ",\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}," \
               "{\"type\":\"function\",\"name\":\"now\"},{\"type\":\"web_search\"}],\"temperature\":0"
static void test_responses_api(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, QWEN3_TOOL_MARKERS, TOOL_ANSWER);
    reply r = { 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather in Paris?\"" RTOOLS "}", NULL, &r);
    if (r.status != 200) fail_msg("status %ld: %s", r.status, r.body.data);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "object"), "response");
    assert_string_equal(jstr(j, "status"), "completed");
    assert_int_equal(json_array_size(json_object_get(j, "output")), 4);
    assert_string_equal(jstr(j, "output.0.type"), "reasoning");
    assert_string_equal(jstr(j, "output.0.content.0.text"), "Look it up.");
    assert_string_equal(jstr(j, "output.1.type"), "message");
    assert_string_equal(jstr(j, "output.1.content.0.text"), "I will check.");
    assert_string_equal(jstr(j, "output.2.type"), "function_call");
    assert_string_equal(jstr(j, "output.2.name"), "get_weather");
    assert_string_equal(jstr(j, "output.2.arguments"), "{\"city\": \"Paris\"}");
    assert_string_equal(jstr(j, "output.3.name"), "now");
    assert_string_equal(jstr(j, "output.3.arguments"), "{}");
    assert_int_equal(jint(j, "usage.total_tokens"), jint(j, "usage.input_tokens") + jint(j, "usage.output_tokens"));
    json_decref(j);
    reply_free(&r);

    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather in Paris?\",\"stream\":true" RTOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    sse_ev ev[256];
    size_t n = parse_sse(r.body.data, ev, 256);
    assert_true(n > 10);
    assert_string_equal(ev[0].name, "response.created");
    assert_string_equal(ev[1].name, "response.in_progress");
    assert_string_equal(ev[n - 1].name, "response.completed");
    strbuf think = { 0 }, text = { 0 };
    size_t added = 0, done = 0, args = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_loads(ev[i].data, 0, NULL);
        assert_non_null(e);
        assert_string_equal(jstr(e, "type"), ev[i].name);
        assert_int_equal(jint(e, "sequence_number"), (long long)i);
        if (!strcmp(ev[i].name, "response.reasoning_text.delta")) strbuf_puts(&think, jstr(e, "delta"));
        if (!strcmp(ev[i].name, "response.output_text.delta")) strbuf_puts(&text, jstr(e, "delta"));
        if (!strcmp(ev[i].name, "response.output_text.done")) assert_string_equal(jstr(e, "text"), text.data);
        if (!strcmp(ev[i].name, "response.reasoning_text.done")) assert_string_equal(jstr(e, "text"), think.data);
        if (!strcmp(ev[i].name, "response.output_item.added")) added++;
        if (!strcmp(ev[i].name, "response.output_item.done")) done++;
        if (!strcmp(ev[i].name, "response.function_call_arguments.done")) args++;
        if (i == n - 1) {
            assert_string_equal(jstr(e, "response.status"), "completed");
            assert_int_equal(json_array_size(json_object_get(json_object_get(e, "response"), "output")), 4);
            assert_string_equal(jstr(e, "response.output.3.arguments"), "{}");
        }
        json_decref(e);
    }
    assert_string_equal(think.data, "Look it up.");
    assert_string_equal(text.data, "I will check.");
    assert_int_equal(added, 4);
    assert_int_equal(done, 4);
    assert_int_equal(args, 2);
    strbuf_free(&think);
    strbuf_free(&text);
    free_sse(ev, n);
    reply_free(&r);

    /* cut short: incomplete, and said why */
    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather?\",\"max_output_tokens\":3}", NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "status"), "incomplete");
    assert_string_equal(jstr(j, "incomplete_details.reason"), "max_output_tokens");
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather?\",\"max_output_tokens\":3,\"stream\":true}", NULL, &r);
    assert_non_null(strstr(r.body.data, "event: response.incomplete\n"));
    reply_free(&r);
    /* refused: OpenAI's error shape, naming the field */
    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"a\",\"previous_response_id\":\"resp_1\"}", NULL, &r);
    assert_int_equal(r.status, 400);
    j = json_of(&r);
    assert_string_equal(jstr(j, "error.param"), "previous_response_id");
    assert_string_equal(jstr(j, "error.type"), "invalid_request_error");
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* Qwen3-Coder: the same answers from its <function=NAME> calls */
static void test_tool_calls_qwen3_coder(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, "<|im_start|><tool_call>\n<function=' + n + '>\n<parameter=<tool_response>",
                "I will check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                "</function>\n</tool_call>\n<tool_call>\n<function=now>\n</function>\n</tool_call>");
    /* the shipped model's SentencePiece adds its space before the script's first word */
    expect_tool_answers(f.port, " I will check.", "");
    stop(&f);
}

/* GLM-4.5: its <tool_call>NAME with arg pairs, after its reasoning */
static void test_tool_calls_glm45(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, "[gMASK]<sop>{{ ns.last_user_index }}<arg_key><|observation|>",
                "<think>Look it up.</think>\nI will check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                "<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>now\n</tool_call>");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    stop(&f);
}

/* MiniMax-M2: invokes in a <minimax:tool_call> block, after the reasoning the prompt opened */
static void test_tool_calls_minimax(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, "]~b]ai <minimax:tool_call> <response>",
                "Look it up.\n</think>\n\nI will check.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n"
                "<parameter name=\"city\">Paris</parameter>\n</invoke>\n<invoke name=\"now\">\n</invoke>\n"
                "</minimax:tool_call>");
    expect_tool_answers(f.port, "I will check.", "Look it up."); /* the reasoning's leading blank dropped */
    stop(&f);
}

/* Kimi K2 Thinking: the calls of a tool-calls section, their ids (Kimi's
 * functions.NAME:IDX) passed on as the calls' ids in all three APIs, so
 * that the conversation comes back with the ids the model wrote; Kimi K2
 * Instruct's the same */
#define KIMI_MARKERS "<|im_middle|> tool_declare <|tool_calls_section_begin|> ## Return of <think></think> reasoning_content"
static void test_tool_calls_kimi(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, KIMI_MARKERS,
                "<think>Look it up.</think>I will check.<|tool_calls_section_begin|><|tool_call_begin|>"
                "functions.get_weather:0<|tool_call_argument_begin|>{\"city\":\"Paris\"}<|tool_call_end|>"
                "<|tool_call_begin|>functions.now:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
                "<|tool_calls_section_end|>");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS "}", NULL, &r);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.0.id"), "functions.get_weather:0");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.1.id"), "functions.now:1");
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/messages", "{\"max_tokens\":600,\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}]" ATOOLS "}",
         NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "content.1.id"), "functions.get_weather:0");
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather?\"" RTOOLS "}", NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "output.2.call_id"), "functions.get_weather:0");
    assert_string_equal(jstr(j, "output.3.call_id"), "functions.now:1");
    json_decref(j);
    reply_free(&r);
    stop(&f);
    /* Kimi K2 Instruct 0905's template: the same calls, no reasoning */
    start_tools(&f, "<|im_system|>tool_declare<|im_middle|>\n  # Tools\n  {{ tools | tojson }}<|im_end|> "
                    "<|tool_calls_section_begin|> ## Return of "
                    "{% if (loop.last and add_generation_prompt) or not loop.last %}<|im_end|>{% endif %}",
                "I will check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                "<|tool_call_argument_begin|>{\"city\":\"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.now:1"
                "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>");
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS "}", NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "tool_calls");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.0.id"), "functions.get_weather:0");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.1.function.name"), "now");
    assert_null(jstr(j, "choices.0.message.reasoning_content"));
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* DeepSeek V3.1: chained NAME<｜tool▁sep｜>{...} calls, ids ours; a request
 * that asks for thinking gets a prompt ending in <think>, so the answer's
 * text up to </think> (no opening tag) is the reasoning. On a byte-level
 * vocabulary (tests/lib/byte_vocab.h, written by main's group setup):
 * SentencePiece's (the shipped model's) would decode the markers' U+2581 as
 * spaces, as it must for its own text. */
static char byte_vocab_path[4200];
#define DS_VOCAB byte_vocab_path
#define DSB "\xef\xbd\x9c"
#define DSP "\xe2\x96\x81"
#define DS_MARKERS "{{'<" DSB "User" DSB ">' + message['content']}} ns.is_last_user {{'<" DSB "Assistant" DSB \
                   "></think>'}} {{'<" DSB "tool" DSP "output" DSP "begin" DSB ">' + message['content']}}"
static void start_deepseek(fixture *f, const char *script)
{
    fake_engine_opts o = { .n_ctx = 4096, .script = script, .chat_template = DS_MARKERS };
    start_with(f, DS_VOCAB, &o);
}

static void test_tool_calls_deepseek(void **st)
{
    (void)st;
    fixture f;
    start_deepseek(&f, "<think>Look it up.</think>I will check.<" DSB "tool" DSP "calls" DSP "begin" DSB "><" DSB "tool" DSP "call" DSP
                "begin" DSB ">get_weather<" DSB "tool" DSP "sep" DSB ">{\"city\":\"Paris\"}<" DSB "tool" DSP "call" DSP "end"
                DSB "><" DSB "tool" DSP "call" DSP "begin" DSB ">now<" DSB "tool" DSP "sep" DSB ">{}<" DSB "tool" DSP "call"
                DSP "end" DSB "><" DSB "tool" DSP "calls" DSP "end" DSB ">");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    stop(&f);
    start_deepseek(&f, "91 = 7 x 13.</think>No.");
    reply r = { 0 };
    http(f.port, "/v1/chat/completions",
         "{\"temperature\":0,\"messages\":[{\"role\":\"user\",\"content\":\"Is 91 prime?\"}],\"chat_template_kwargs\":{\"thinking\":true}}",
         NULL, &r);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.message.reasoning_content"), "91 = 7 x 13.");
    assert_string_equal(jstr(j, "choices.0.message.content"), "No.");
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/messages",
         "{\"max_tokens\":600,\"temperature\":0,\"thinking\":{\"type\":\"enabled\"},\"messages\":[{\"role\":\"user\",\"content\":\"Is 91 prime?\"}]}",
         NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "content.0.type"), "thinking");
    assert_string_equal(jstr(j, "content.0.thinking"), "91 = 7 x 13.");
    assert_string_equal(jstr(j, "content.1.text"), "No.");
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* Llama 4: bare {"name": ..., "parameters": ...} objects after the text;
 * <|python_start|> and <|python_end|> are control tokens left out of it */
#define L31_MARKERS "{{- '<|start_header_id|>' }} tools_in_user_message Cutting Knowledge Date: December 2023"
#define L4_MARKERS "{{- '<|header_start|>' + message['role'] + '<|header_end|>' }} tools_in_user_message {{- '<|python_start|>' }}"
static void test_tool_calls_llama4(void **st)
{
    (void)st;
    fixture f;
    start_tools(&f, L4_MARKERS,
                "<think>Look it up.</think>I will check.{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"
                "{\"name\": \"now\", \"parameters\": {}}");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    stop(&f);
    /* Qwen3 Thinking-2507: the prompt ends in <think>, so the answer's text up to </think> is the reasoning */
    start_tools(&f, "<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }} tool_call.arguments is string ns.last_query_index "
                    "<tool_response> {{- '<|im_start|>assistant\\n<think>\\n' }}",
                "Look it up.</think>\n\nI will check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    stop(&f);
    /* Llama 3.1's: the same answers */
    start_tools(&f, L31_MARKERS,
                "<think>Look it up.</think>I will check.{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"
                "{\"name\": \"now\", \"parameters\": {}}");
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    stop(&f);
}

/* tool_choice forcing a call: the prompt ends with the call's opening, and
 * the answer (the fake engine's script, here only the rest of the call) is
 * read from it; named, through the name. In all three APIs; refusals for a
 * name not among the tools, and with JSON mode. On DeepSeek LLM's byte-level
 * vocabulary, which adds no space before the script's first word. */
static void start_on(fixture *f, const char *vocab, const char *tmpl, const char *script)
{
    fake_engine_opts o = { .n_ctx = 4096, .script = script, .chat_template = tmpl };
    start_with(f, vocab, &o);
}

static void expect_forced(int port, const char *path, const char *body, const char *name_path, const char *want)
{
    reply r = { 0 };
    http(port, path, body, NULL, &r);
    if (r.status != 200) fail_msg("%s: %ld %s", body, r.status, r.body.data);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, name_path), want);
    json_decref(j);
    reply_free(&r);
}

static void test_tool_choice_forced(void **st)
{
    (void)st;
    fixture f;
    /* required: the model writes the name, held to the tools' names, and the arguments, held to the
     * tool's schema; the call closes where the object does (the script parts its tokens there, as a
     * model held to the object does: the fake engine cannot choose another token that fits) */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "now\", \"arguments\": {} }");
    expect_forced(f.port, "/v1/chat/completions", CHAT TOOLS ",\"tool_choice\":\"required\"}",
                  "choices.0.message.tool_calls.0.function.name", "now");
    expect_forced(f.port, "/v1/messages",
                  "{\"max_tokens\":600,\"tool_choice\":{\"type\":\"any\"},\"messages\":[{\"role\":"
                  "\"user\",\"content\":\"Weather?\"}]" ATOOLS "}",
                  "content.0.name", "now");
    stop(&f);
    /* required, and the model writes a name no tool has: the name is held to the tools' (the fake
     * engine falls back to the lowest token that may come, and then keeps doing so: the arguments
     * never close here, and the unparsed call comes back as text) */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "nope");
    reply rq = { 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS ",\"max_tokens\":30,\"tool_choice\":\"required\"}", NULL, &rq);
    json_t *jq = json_of(&rq);
    const char *text = jstr(jq, "choices.0.message.content");
    if (!text || (strncmp(text, "<tool_call>\n{\"name\": \"now\", \"arguments\": {", 40) &&
                  strncmp(text, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {", 48)))
        fail_msg("a forced call's name not held to the tools': %s", text ? text : "(none)");
    json_decref(jq);
    reply_free(&rq);
    stop(&f);
    /* required in a tagged format (Qwen3-Coder's): the name is held to the tools', the rest is free */
    start_on(&f, DS_VOCAB, "<|im_start|><tool_call>\n<function=' + n + '>\n<parameter=<tool_response>", "nope");
    rq = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS ",\"max_tokens\":12,\"tool_choice\":\"required\"}", NULL, &rq);
    jq = json_of(&rq);
    text = jstr(jq, "choices.0.message.content");
    if (!text || (strncmp(text, "<tool_call>\n<function=now>\n", 27) &&
                  strncmp(text, "<tool_call>\n<function=get_weather>\n", 35)))
        fail_msg("a forced call's name not held to the tools': %s", text ? text : "(none)");
    json_decref(jq);
    reply_free(&rq);
    stop(&f);
    /* required, a tool's name, arguments against its schema: held to it, and the call closes where
     * the object does */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "get_weather\", \"arguments\": {\"city\": 5, \"x\": 1}}\n</tool_call>");
    rq = (reply){ 0 };
    http(f.port, "/v1/chat/completions",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"temperature\":0,\"tools\":[{\"type\":\"function\","
         "\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"additionalProperties\":false,"
         "\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}}},"
         "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],\"tool_choice\":\"required\"}",
         NULL, &rq);
    jq = json_of(&rq);
    assert_string_equal(jstr(jq, "choices.0.finish_reason"), "tool_calls");
    assert_string_equal(jstr(jq, "choices.0.message.tool_calls.0.function.name"), "get_weather");
    json_t *aq = json_loads(jstr(jq, "choices.0.message.tool_calls.0.function.arguments"), 0, NULL);
    if (!json_is_object(aq) || json_object_size(aq) != 1 || !json_is_string(json_object_get(aq, "city")))
        fail_msg("arguments outside the schema: %s", jstr(jq, "choices.0.message.tool_calls.0.function.arguments"));
    json_decref(aq);
    json_decref(jq);
    reply_free(&rq);
    stop(&f);
    /* named: the prompt carries the name, the model the arguments, held to the tool's schema (here any
     * object), and the call closes where the object does */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "{\"city\": \"Paris\" }");
    expect_forced(f.port, "/v1/chat/completions",
                  CHAT TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}",
                  "choices.0.message.tool_calls.0.function.arguments", "{\"city\": \"Paris\"}");
    expect_forced(f.port, "/v1/responses",
                  "{\"input\":\"Weather?\",\"tool_choice\":{\"type\":\"function\",\"name\":\"get_weather\"}" RTOOLS "}",
                  "output.0.name", "get_weather");
    expect_forced(f.port, "/v1/messages",
                  "{\"max_tokens\":600,\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\"},"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}]" ATOOLS "}",
                  "content.0.input.city", "Paris");
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}}",
         NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "not among the tools"));
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS ",\"tool_choice\":\"required\",\"response_format\":{\"type\":\"json_object\"}}",
         NULL, &r);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    stop(&f);
    /* named, with a schema json_schema.h holds: the arguments are held to it (a number where a string
     * must come, a key it forbids: neither can be written), and the call closes where the object does */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "{\"city\": 5, \"x\": 1}}\n</tool_call>");
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"temperature\":0,\"tools\":[{\"type\":\"function\","
         "\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"additionalProperties\":false,"
         "\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}}}],"
         "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}",
         NULL, &r);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "tool_calls");
    json_t *args = json_loads(jstr(j, "choices.0.message.tool_calls.0.function.arguments"), 0, NULL);
    if (!json_is_object(args) || json_object_size(args) != 1 || !json_is_string(json_object_get(args, "city")))
        fail_msg("arguments outside the schema: %s", jstr(j, "choices.0.message.tool_calls.0.function.arguments"));
    json_decref(args);
    json_decref(j);
    reply_free(&r);
    stop(&f);
    /* DeepSeek V3.1's format, named: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜> in the prompt */
    start_on(&f, DS_VOCAB, DS_MARKERS, "{\"city\": \"Oslo\" }");
    expect_forced(f.port, "/v1/chat/completions",
                  CHAT TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}",
                  "choices.0.message.tool_calls.0.function.arguments", "{\"city\": \"Oslo\"}");
    stop(&f);
}

/* Mistral v3: [TOOL_CALLS] then a JSON list; the server's call ids are 9
 * letters and digits, the only ones its template takes back, in all APIs;
 * the history comes back with them, and an id of another length is a 400 */
#define M3_MARKERS "{{- \"[AVAILABLE_TOOLS] [\" }} {{- \"[TOOL_CALLS] [\" }} {{- '[TOOL_RESULTS] {\"content\": ' }}" \
    "{%- if not tool_call.id is defined or tool_call.id|length != 9 %} {%- if loop.last and system_message is defined %} " \
    "{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}"
static bool mistral_id(const char *id)
{
    if (!id || strlen(id) != 9) return false;
    for (size_t i = 0; i < 9; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')))
            return false;
    return true;
}

static void test_tool_calls_mistral(void **st)
{
    (void)st;
    /* byte-level: no space is added before the script's first word */
    fixture f;
    start_on(&f, DS_VOCAB, M3_MARKERS,
                "I will check.[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                "{\"name\": \"now\", \"arguments\": {}}]");
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT TOOLS "}", NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "choices.0.finish_reason"), "tool_calls");
    assert_string_equal(jstr(j, "choices.0.message.content"), "I will check.");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.0.function.name"), "get_weather");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.0.function.arguments"), "{\"city\": \"Paris\"}");
    assert_string_equal(jstr(j, "choices.0.message.tool_calls.1.function.name"), "now");
    char id0[16], id1[16];
    snprintf(id0, sizeof id0, "%s", jstr(j, "choices.0.message.tool_calls.0.id"));
    snprintf(id1, sizeof id1, "%s", jstr(j, "choices.0.message.tool_calls.1.id"));
    if (!mistral_id(id0) || !mistral_id(id1) || !strcmp(id0, id1)) fail_msg("call ids %s, %s", id0, id1);
    json_decref(j);
    reply_free(&r);
    /* the next turn sends the calls and their results back with those ids */
    char body[2048];
    snprintf(body, sizeof body,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":null,"
             "\"tool_calls\":[{\"id\":\"%s\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}}]},"
             "{\"role\":\"tool\",\"tool_call_id\":\"%s\",\"content\":\"noon\"}]" TOOLS "}", id0, id0);
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", body, NULL, &r);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    snprintf(body, sizeof body,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":null,"
             "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}}]}]"
             TOOLS "}");
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", body, NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "9 characters"));
    reply_free(&r);
    /* Anthropic's tool_use blocks and the Responses API's call_id carry the same kind of id */
    r = (reply){ 0 };
    http(f.port, "/v1/messages", "{\"max_tokens\":600,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]" ATOOLS "}",
         NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "stop_reason"), "tool_use");
    assert_string_equal(jstr(j, "content.1.type"), "tool_use");
    assert_true(mistral_id(jstr(j, "content.1.id")));
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/responses", "{\"input\":\"Weather?\"" RTOOLS "}", NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "output.0.type"), "message"); /* the text before the calls */
    assert_string_equal(jstr(j, "output.1.type"), "function_call");
    assert_true(mistral_id(jstr(j, "output.1.call_id")));
    json_decref(j);
    reply_free(&r);
    stop(&f);
    /* a named forced call: [TOOL_CALLS] [{"name": "NAME", "arguments": in the prompt, the model the rest */
    start_on(&f, DS_VOCAB, M3_MARKERS, "{\"city\": \"Oslo\" }");
    expect_forced(f.port, "/v1/chat/completions",
                  CHAT TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}",
                  "choices.0.message.tool_calls.0.function.arguments", "{\"city\": \"Oslo\"}");
    stop(&f);
}

/* Structured outputs: response_format json_schema holds the answer to the
 * schema too. A script that follows it comes out as it is; one that adds a
 * key the schema forbids is closed where the schema allows (the fake
 * engine's fallback: blanks, then the close); a schema json_schema.h cannot
 * hold is a 400 naming response_format. */
#define PERSON_FORMAT "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"strict\":true," \
    "\"schema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"name\",\"age\",\"tags\"]," \
    "\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\"," \
    "\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}}}}}}"
static void test_json_schema(void **st)
{
    (void)st;
    fixture f;
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "{\"name\": \"Bob\", \"age\": 7, \"tags\": [\"a\", \"b\"]}");
    char *content, *reasoning;
    json_t *v = json_answer(f.port, "," PERSON_FORMAT, &content, &reasoning);
    if (!json_is_object(v)) fail_msg("not a JSON object: [%s]", content);
    assert_string_equal(content, "{\"name\": \"Bob\", \"age\": 7, \"tags\": [\"a\", \"b\"]}");
    json_decref(v);
    free(content);
    free(reasoning);
    stop(&f);
    /* a key the schema forbids: the ',' before it cannot come (no key may follow), the object closes */
    start_on(&f, DS_VOCAB, QWEN3_TOOL_MARKERS, "{\"name\": \"Bob\", \"age\": 7, \"extra\": true}");
    v = json_answer(f.port, ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
                            "\"additionalProperties\":false,\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}}}}}",
                    &content, &reasoning);
    if (!json_is_object(v)) fail_msg("not a JSON object: [%s]", content);
    assert_int_equal(json_object_size(v), 2);
    assert_null(json_object_get(v, "extra"));
    json_decref(v);
    free(content);
    free(reasoning);
    reply r = { 0 };
    http(f.port, "/v1/chat/completions",
         CHAT ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"array\"}}}}", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "the top level must allow an object"));
    reply_free(&r);
    stop(&f);
}

/* The markers of Kimi K2's and DeepSeek's calls are control tokens in
 * llama.cpp's GGUFs (its converter types every <|...|> and <｜...｜> token
 * so), whose pieces are empty: the server keeps their text in chat answers,
 * or no call would ever be found. Here they are control tokens of the
 * shipped model's vocabulary relabelled, and so are <think> and </think>
 * (any added token marked special is one): the reasoning must still come
 * apart. */
static void expect_control_markers(const char *const *mark, const char *tmpl, const char *script)
{
    char *dir, gg[4200], err[256];
    dir = make_scratch_dir();
    assert_non_null(dir);
    snprintf(gg, sizeof gg, "%s/markers.gguf", dir);
    if (vocab_relabel(GGUF, gg, 3, mark, 7, err, sizeof err)) fail_msg("%s", err);
    fake_engine_opts o = { .n_ctx = 4096, .chat_template = tmpl, .script = script };
    fixture f;
    start_with(&f, gg, &o);
    expect_tool_answers(f.port, "I will check.", "Look it up.");
    /* /v1/completions is the raw text: the markers' text aside, as for any control token */
    reply r = { 0 };
    http(f.port, "/v1/completions", "{\"prompt\":\"Weather?\",\"temperature\":0}", NULL, &r);
    json_t *j = json_of(&r);
    assert_null(strstr(jstr(j, "choices.0.text"), mark[4]));
    assert_non_null(strstr(jstr(j, "choices.0.text"), "get_weather"));
    json_decref(j);
    reply_free(&r);
    stop(&f);
    drop_dir(dir);
}

static void test_tool_calls_control_markers(void **st)
{
    (void)st;
    static const char *const KIMI[] = { "<think>", "</think>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                                        "<|tool_call_argument_begin|>", "<|tool_call_end|>" };
    expect_control_markers(KIMI, KIMI_MARKERS,
                           "<think>Look it up.</think>I will check.<|tool_calls_section_begin|><|tool_call_begin|>"
                           "functions.get_weather:0<|tool_call_argument_begin|>{\"city\":\"Paris\"}<|tool_call_end|>"
                           "<|tool_call_begin|>functions.now:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
                           "<|tool_calls_section_end|>");
    static const char *const DS[] = { "<think>", "</think>", "<" DSB "tool" DSP "calls" DSP "begin" DSB ">", "<" DSB "tool" DSP "calls" DSP "end" DSB ">",
                                      "<" DSB "tool" DSP "call" DSP "begin" DSB ">", "<" DSB "tool" DSP "call" DSP "end" DSB ">",
                                      "<" DSB "tool" DSP "sep" DSB ">" };
    char script[1024];
    snprintf(script, sizeof script, "<think>Look it up.</think>I will check.%s%sget_weather%s{\"city\":\"Paris\"}%s%snow%s{}%s%s",
             DS[2], DS[4], DS[6], DS[5], DS[4], DS[6], DS[5], DS[3]);
    expect_control_markers(DS, DS_MARKERS, script);
}

/* gpt-oss: calls are harmony messages addressed to=functions.NAME (the
 * recipient before or after the channel), apart from the text; the
 * analysis is the reasoning, no final answer means no content. */
static void test_tool_calls_harmony(void **st)
{
    (void)st;
    char *dir, gg[4200];
    harmony_vocab(&dir, gg, sizeof gg);
    fake_engine_opts o = {
        .n_ctx = 4096, .chat_template = "{{ '<|channel|>' }}{{ render_tool_namespace() }}to=assistant",
        .script = "<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant to=functions.get_weather<|channel|>"
                  "commentary json<|message|>{\"city\":\"Paris\"}<|end|><|start|>assistant<|channel|>commentary "
                  "to=functions.now <|constrain|>json<|message|>{}",
    };
    fixture f;
    start_with(&f, gg, &o);
    /* SentencePiece pieces after a marker start with a space: " Look" */
    expect_tool_answers(f.port, NULL, " Look it up.");
    /* the Responses API (Codex with gpt-oss): the analysis as a reasoning item, no message item
     * (no final answer), the two calls, plain and streamed */
    for (int stream = 0; stream < 2; stream++) {
        reply r = { 0 };
        http(f.port, "/v1/responses", stream ? "{\"input\":\"Weather?\",\"stream\":true" RTOOLS "}"
                                             : "{\"input\":\"Weather?\"" RTOOLS "}", NULL, &r);
        assert_int_equal(r.status, 200);
        json_t *j;
        if (stream) {
            sse_ev ev[256];
            size_t n = parse_sse(r.body.data, ev, 256);
            assert_string_equal(ev[n - 1].name, "response.completed");
            json_t *last = json_loads(ev[n - 1].data, 0, NULL);
            j = json_incref(json_object_get(last, "response"));
            json_decref(last);
            free_sse(ev, n);
        } else {
            j = json_of(&r);
        }
        assert_int_equal(json_array_size(json_object_get(j, "output")), 3);
        assert_string_equal(jstr(j, "output.0.type"), "reasoning");
        assert_string_equal(jstr(j, "output.0.content.0.text"), " Look it up.");
        assert_string_equal(jstr(j, "output.1.name"), "get_weather");
        assert_string_equal(jstr(j, "output.1.arguments"), "{\"city\": \"Paris\"}");
        assert_string_equal(jstr(j, "output.2.name"), "now");
        json_decref(j);
        reply_free(&r);
    }
    stop(&f);
    drop_dir(dir);
}

static void test_anthropic_stream(void **st)
{
    (void)st;
    fixture f;
    server_config c = { 0 };
    start(&f, &c, 0, true);
    static const char *const body =
        "{\"model\":\"anything\",\"max_tokens\":100,\"temperature\":0,\"system\":\"Be kind.\","
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}],"
        "\"stop_sequences\":[\"red ball\"]";
    char b[1024];
    snprintf(b, sizeof b, "%s}", body);
    reply r = { 0 };
    http(f.port, "/v1/messages", b, "anthropic-version: 2023-06-01", &r);
    assert_int_equal(r.status, 200);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "type"), "message");
    assert_string_equal(jstr(j, "stop_reason"), "stop_sequence");
    assert_string_equal(jstr(j, "stop_sequence"), "red ball");
    char *plain = strdup(jstr(j, "content.0.text"));
    assert_null(strstr(plain, "red"));
    json_decref(j);
    reply_free(&r);

    snprintf(b, sizeof b, "%s,\"stream\":true}", body);
    r = (reply){ 0 };
    http(f.port, "/v1/messages?beta=true", b, "anthropic-version: 2023-06-01", &r);
    assert_int_equal(r.status, 200);
    static sse_ev ev[256];
    size_t n = parse_sse(r.body.data, ev, 256);
    const char *seq[] = { "message_start", "content_block_start", "ping" };
    assert_true(n > 6);
    for (size_t i = 0; i < 3; i++) assert_string_equal(ev[i].name, seq[i]);
    strbuf text = { 0 };
    size_t i = 3;
    for (; i < n && !strcmp(ev[i].name, "content_block_delta"); i++) {
        json_t *d = json_loads(ev[i].data, 0, NULL);
        assert_string_equal(jstr(d, "delta.type"), "text_delta");
        strbuf_puts(&text, jstr(d, "delta.text"));
        json_decref(d);
    }
    assert_int_equal(n, i + 3);
    assert_string_equal(ev[i].name, "content_block_stop");
    assert_string_equal(ev[i + 1].name, "message_delta");
    assert_string_equal(ev[i + 2].name, "message_stop");
    json_t *md = json_loads(ev[i + 1].data, 0, NULL);
    assert_string_equal(jstr(md, "delta.stop_reason"), "stop_sequence");
    assert_true(json_integer_value(json_object_get(json_object_get(md, "usage"), "output_tokens")) > 0);
    json_decref(md);
    char *streamed = strbuf_take(&text);
    assert_string_equal(streamed, plain);
    free(streamed);
    free(plain);
    free_sse(ev, n);
    reply_free(&r);

    /* max_tokens stop reason and an Anthropic-shaped 400 */
    r = (reply){ 0 };
    http(f.port, "/v1/messages", "{\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, &r);
    j = json_of(&r);
    assert_string_equal(jstr(j, "stop_reason"), "max_tokens");
    json_decref(j);
    reply_free(&r);
    r = (reply){ 0 };
    http(f.port, "/v1/messages", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, &r);
    assert_int_equal(r.status, 400);
    j = json_of(&r);
    assert_string_equal(jstr(j, "type"), "error");
    assert_string_equal(jstr(j, "error.type"), "invalid_request_error");
    assert_non_null(strstr(jstr(j, "error.message"), "max_tokens"));
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

static void test_errors(void **st)
{
    (void)st;
    fixture f;
    server_config c = { .max_body = 2048, .n_ctx = 64, .strict_max_tokens = true };
    start(&f, &c, 0, true);
    struct { const char *path, *body; long status; const char *param; } cases[] = {
        { "/nope", NULL, 404, NULL },
        { "/v1/chat/completions", NULL, 405, NULL },
        { "/v1/chat/completions", "{\"messages\":[", 400, "body" },
        { "/v1/chat/completions", "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", 400, "messages[0].role" },
        { "/v1/chat/completions", CHAT ",\"max_tokens\":65}", 400, "max_tokens" },
        { "/v1/chat/completions", CHAT ",\"max_tokens\":60}", 400, "max_tokens" }, /* prompt + 60 > 64 */
        { "/v1/chat/completions", CHAT ",\"n\":3}", 400, "n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r = { 0 };
        http(f.port, cases[i].path, cases[i].body, NULL, &r);
        if (r.status != cases[i].status) fail_msg("case %zu: status %ld: %s", i, r.status, r.body.data);
        json_t *j = json_of(&r);
        assert_non_null(jstr(j, "error.message"));
        if (cases[i].param) assert_string_equal(jstr(j, "error.param"), cases[i].param);
        json_decref(j);
        reply_free(&r);
    }
    /* a long prompt: the context limit is named */
    strbuf big = { 0 };
    strbuf_puts(&big, "{\"messages\":[{\"role\":\"user\",\"content\":\"");
    for (int i = 0; i < 100; i++) strbuf_puts(&big, "story ");
    strbuf_puts(&big, "\"}]}");
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", big.data, NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body.data, "context length"));
    reply_free(&r);
    /* a body over --max-body */
    for (int i = 0; i < 400; i++) strbuf_puts(&big, "padding ");
    r = (reply){ 0 };
    http(f.port, "/v1/chat/completions", big.data, NULL, &r);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body.data, "2048 bytes"));
    reply_free(&r);
    strbuf_free(&big);
    stop(&f);
}

/* Pictures over HTTP, in both APIs: a good one is refused by name (strata
 * runs no vision projector yet: the pack has none, or one it does not run),
 * hostile ones each with their own reason, all 400 naming the part. */
static void post_image(int port, bool anthropic, const char *mime, const uint8_t *d, size_t n, const char *want)
{
    char *b64 = timg_base64(d, n);
    strbuf body = { 0 };
    if (anthropic)
        strbuf_printf(&body, "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                             "\"text\":\"what is this?\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\","
                             "\"media_type\":\"%s\",\"data\":\"%s\"}}]}]}", mime, b64);
    else
        strbuf_printf(&body, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                             "\"what is this?\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:%s;base64,%s\"}}]}]}",
                      mime, b64);
    reply r = { 0 };
    http(port, anthropic ? "/v1/messages" : "/v1/chat/completions", body.data, NULL, &r);
    if (r.status != 400 || !strstr(r.body.data, want)) fail_msg("%ld %s, want 400 '%s'", r.status, r.body.data, want);
    json_t *j = json_of(&r);
    if (anthropic) assert_string_equal(jstr(j, "type"), "error");
    else assert_string_equal(jstr(j, "error.param"), "messages[0].content[1]");
    assert_non_null(strstr(jstr(j, "error.message"), "messages[0].content[1]: "));
    json_decref(j);
    reply_free(&r);
    strbuf_free(&body);
    free(b64);
}

static void test_images(void **st)
{
    (void)st;
    fixture f;
    server_config c = { 0 };
    start(&f, &c, 0, true);
    uint8_t *rgb = timg_pattern(16, 12, 3, 1);
    size_t n, nh;
    uint8_t *png = timg_png_rgb(16, 12, rgb, &n), *huge = timg_png_header(30000, 30000, &nh);
    for (int a = 0; a < 2; a++) {
        post_image(f.port, a, "image/png", png, n, "this model takes no images");
        post_image(f.port, a, "image/png", png, n - 20, "PNG: the data ends early (truncated)");
        post_image(f.port, a, "image/png", huge, nh, "30000 x 30000 pixels is more than");
        post_image(f.port, a, "image/jpeg", png, n, "the data is a PNG picture, not image/jpeg as declared");
        post_image(f.port, a, "image/png", (const uint8_t *)"GIF89a", 6, "not a PNG, JPEG or WebP picture");
    }
    /* a pack with a projector the engine does not take pictures through: said so, with its reason */
    f.e->vision = "gemma3";
    f.e->vision_off = "vision projector 'gemma3' is not supported (supported: qwen3vl_merger, llama4)";
    post_image(f.port, false, "image/png", png, n,
               "vision projector (gemma3) takes no pictures here: vision projector 'gemma3' is not supported");
    f.e->vision = NULL;
    f.e->vision_off = NULL;
    /* the server is unharmed: a text request still answers */
    reply r = { 0 };
    http(f.port, "/v1/chat/completions", CHAT ",\"max_tokens\":4}", NULL, &r);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    free(png);
    free(huge);
    free(rgb);
    stop(&f);
}

/* By default a max_tokens the context cannot hold (Claude Code asks for
 * 32000) is cut to the room the prompt leaves: the answer fills the
 * context and says so ("length", "max_tokens"); the prompt is still never
 * cut. --strict-max-tokens refuses it (test_errors). */
static void test_max_tokens_over_context(void **st)
{
    (void)st;
    /* less than the prompt and the shortest story together (39 + 34 of the shipped model's tokens) */
    enum { N_CTX = 64 };
    fixture f;
    server_config c = { .n_ctx = N_CTX };
    start(&f, &c, 0, true);
    const char *bodies[2] = { CHAT ",\"max_tokens\":32000}", CHAT ",\"max_tokens\":65}" };
    for (int i = 0; i < 2; i++) {
        reply r = { 0 };
        http(f.port, "/v1/chat/completions", bodies[i], NULL, &r);
        if (r.status != 200) fail_msg("body %d: status %ld: %s", i, r.status, r.body.data);
        json_t *j = json_of(&r);
        assert_string_equal(jstr(j, "choices.0.finish_reason"), "length");
        assert_int_equal(jint(j, "usage.prompt_tokens") + jint(j, "usage.completion_tokens"), N_CTX);
        json_decref(j);
        reply_free(&r);
    }
    reply r = { 0 };
    http(f.port, "/v1/messages",
         "{\"model\":\"x\",\"max_tokens\":32000,\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story\"}]}",
         NULL, &r);
    if (r.status != 200) fail_msg("messages: status %ld: %s", r.status, r.body.data);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "stop_reason"), "max_tokens");
    assert_int_equal(jint(j, "usage.input_tokens") + jint(j, "usage.cache_read_input_tokens") +
                         jint(j, "usage.output_tokens"), N_CTX);
    json_decref(j);
    reply_free(&r);
    stop(&f);
}

/* ---- concurrency ---------------------------------------------------------- */

typedef struct client {
    int    port, seed;
    bool   ok;
    size_t abort_after;
    long   status;
} client;

static void *stream_client(void *ud)
{
    client *cl = ud;
    char body[512];
    snprintf(body, sizeof body, CHAT ",\"seed\":%d,\"temperature\":0.5,\"stream\":true}", cl->seed);
    reply r = { .abort_after = cl->abort_after };
    http(cl->port, "/v1/chat/completions", body, NULL, &r);
    cl->status = r.status;
    if (!cl->abort_after && r.status == 200) {
        char fin[32];
        char *t = openai_stream_text(r.body.data, false, fin);
        cl->ok = !strcmp(t + 1, fake_engine_story(fake_engine_story_for(0.5f, (unsigned)cl->seed)));
        free(t);
    }
    reply_free(&r);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_eight_streams(void **st)
{
    (void)st;
    fixture f;
    server_config c = { .parallel = 4, .queue = 8 };
    start(&f, &c, 1, true);
    for (int round = 0; round < 2; round++) {
        pthread_t th[8];
        client cl[8];
        for (int i = 0; i < 8; i++) {
            cl[i] = (client){ .port = f.port, .seed = i + round };
            pthread_create(&th[i], NULL, stream_client, &cl[i]);
        }
        for (int i = 0; i < 8; i++) {
            pthread_join(th[i], NULL);
            if (!cl[i].ok) fail_msg("client %d: status %ld, wrong or missing text", i, cl[i].status);
        }
    }
    /* a client can read a stream's end before the server has given its slot back: wait for that, briefly */
    reply r = { 0 };
    for (int tries = 0; tries < 200; tries++) {
        reply_free(&r);
        r = (reply){ 0 };
        http(f.port, "/metrics", NULL, NULL, &r);
        if (strstr(r.body.data, "strata_busy_slots 0")) break;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    assert_non_null(strstr(r.body.data, "strata_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 16"));
    assert_non_null(strstr(r.body.data, "strata_busy_slots 0"));
    assert_non_null(strstr(r.body.data, "strata_queue_depth 0"));
    assert_non_null(strstr(r.body.data, "strata_time_to_first_token_seconds_count 16"));
    assert_non_null(strstr(r.body.data, "strata_token_latency_seconds_bucket"));
    reply_free(&r);
    stop(&f);
}

static void test_queue_full_and_disconnect(void **st)
{
    (void)st;
    fixture f;
    server_config c = { .parallel = 1, .queue = -1 };
    start(&f, &c, 40, true); /* ~55 tokens x 40 ms: a 2 s generation */
    /* a client that hangs up after its first bytes */
    client quitter = { .port = f.port, .seed = 1, .abort_after = 1 };
    pthread_t th;
    pthread_create(&th, NULL, stream_client, &quitter);
    pthread_join(th, NULL);
    /* the slot comes back within a token or two, not after the 2 s story */
    double t0 = now_s();
    long status = 429;
    while (status == 429 && now_s() - t0 < 1.5) {
        reply r = { 0 };
        http(f.port, "/v1/chat/completions", CHAT ",\"max_tokens\":1}", NULL, &r);
        status = r.status;
        if (status == 429) {
            assert_non_null(strstr(r.headers.data, "Retry-After: 1"));
            json_t *j = json_of(&r);
            assert_string_equal(jstr(j, "error.type"), "rate_limit_error");
            json_decref(j);
        }
        reply_free(&r);
    }
    assert_int_equal(status, 200);
    assert_true(now_s() - t0 < 1.5);

    /* while one stream holds the only slot and there is no queue: 429 */
    client holder = { .port = f.port, .seed = 2 };
    pthread_create(&th, NULL, stream_client, &holder);
    struct timespec ts = { 0, 300 * 1000000L };
    nanosleep(&ts, NULL);
    reply r = { 0 };
    http(f.port, "/v1/messages", "{\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, &r);
    assert_int_equal(r.status, 429);
    json_t *j = json_of(&r);
    assert_string_equal(jstr(j, "error.type"), "rate_limit_error");
    json_decref(j);
    reply_free(&r);
    pthread_join(th, NULL);
    assert_true(holder.ok);
    stop(&f);
}

/* The byte-level vocabulary (DS_VOCAB) in a scratch folder, for the whole group. */
static char *byte_vocab_dir;

static int write_byte_vocab(void **st)
{
    (void)st;
    char err[256];
    byte_vocab_dir = make_scratch_dir();
    if (!byte_vocab_dir) return -1;
    snprintf(byte_vocab_path, sizeof byte_vocab_path, "%s/bytes.gguf", byte_vocab_dir);
    if (byte_vocab_write(byte_vocab_path, err, sizeof err)) { printf("%s\n", err); return -1; }
    return 0;
}

static int remove_byte_vocab(void **st)
{
    (void)st;
    if (byte_vocab_dir) drop_dir(byte_vocab_dir);
    return 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_while_loading),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_openai_stream_equals_plain),
        cmocka_unit_test(test_anthropic_stream),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_max_tokens_over_context),
        cmocka_unit_test(test_eight_streams),
        cmocka_unit_test(test_queue_full_and_disconnect),
        cmocka_unit_test(test_gpt_oss_harmony),
        cmocka_unit_test(test_think_reasoning),
        cmocka_unit_test(test_tool_calls),
        cmocka_unit_test(test_json_mode),
        cmocka_unit_test(test_responses_api),
        cmocka_unit_test(test_tool_calls_harmony),
        cmocka_unit_test(test_tool_calls_qwen3_coder),
        cmocka_unit_test(test_tool_calls_glm45),
        cmocka_unit_test(test_tool_calls_minimax),
        cmocka_unit_test(test_tool_calls_kimi),
        cmocka_unit_test(test_tool_calls_deepseek),
        cmocka_unit_test(test_tool_calls_control_markers),
        cmocka_unit_test(test_tool_choice_forced),
        cmocka_unit_test(test_tool_calls_mistral),
        cmocka_unit_test(test_json_schema),
        cmocka_unit_test(test_tool_calls_llama4),
    };
    int rc = cmocka_run_group_tests(tests, write_byte_vocab, remove_byte_vocab);
    curl_global_cleanup();
    return rc;
}
