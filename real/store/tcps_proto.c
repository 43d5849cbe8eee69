/* real/store/tcps_proto.c - decoding PyTorch's TCPStore commands (see
 * tcps_proto.h), a pure function over a buffer so that it can be fuzzed
 * like herd's own frames. */
#include "real/store/tcps_proto.h"

#include <stdio.h>
#include <string.h>

const uint8_t tcps_hello[TCPS_HELLO_LEN] = {0x00, 0xce, 0xf7, 0x85, 0x3c};

static const char *const op_names[TCPS_OP_MAX_] = {
    "validate",  "set",       "compare_set", "get",        "add",
    "check",     "wait",      "num_keys",    "delete_key", "append",
    "multi_get", "multi_set", "cancel_wait", "ping"};

const char *tcps_op_name(int op)
{
    return op >= 0 && op < TCPS_OP_MAX_ ? op_names[op] : "?";
}

typedef struct cursor {
    const uint8_t *buf;
    size_t len, off;
    int partial, bad;
    char *why;
    size_t whylen;
} cursor_t;

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* n more bytes, or NULL (partial) when the buffer ends first. */
static const uint8_t *take(cursor_t *c, size_t n)
{
    if (c->partial || c->bad)
        return NULL;
    if (c->len - c->off < n) {
        c->partial = 1;
        c->off += n; /* the lower bound of the command's size */
        return NULL;
    }
    const uint8_t *p = c->buf + c->off;
    c->off += n;
    return p;
}

static uint64_t take_u(cursor_t *c, int n)
{
    const uint8_t *p = take(c, (size_t)n);
    return p ? le(p, n) : 0;
}

static const uint8_t *take_str(cursor_t *c, size_t max, const char *what,
                               size_t *len)
{
    uint64_t n = take_u(c, 8);
    if (!c->partial && !c->bad && n > max) {
        c->bad = 1;
        snprintf(c->why, c->whylen, "%s of %llu bytes (limit %zu)", what,
                 (unsigned long long)n, max);
    }
    *len = (size_t)n;
    return take(c, (size_t)n);
}

static void take_list(cursor_t *c, tcps_req_t *q, int pairs)
{
    q->n = take_u(c, 8);
    if (!c->partial && q->n > STORE_MAX_WAIT_KEYS) {
        c->bad = 1;
        snprintf(c->why, c->whylen, "%s of %llu keys (limit %u)",
                 tcps_op_name(q->op), (unsigned long long)q->n,
                 STORE_MAX_WAIT_KEYS);
        return;
    }
    size_t start = c->off, l = 0;
    for (uint64_t i = 0; i < q->n && !c->partial && !c->bad; i++) {
        take_str(c, STORE_MAX_KEY, "a key", &l);
        if (pairs)
            take_str(c, STORE_MAX_VALUE, "a value", &l);
    }
    q->list = c->buf + start;
    q->list_len = c->off - start;
}

/* torch 1.x's op bytes, in order from 0 (7 is watch_key: none here). */
static const tcps_op_t v1_ops[] = {
    TCPS_SET,  TCPS_COMPARE_SET, TCPS_GET,     TCPS_ADD,       TCPS_CHECK,
    TCPS_WAIT, TCPS_GETNUMKEYS,  TCPS_OP_MAX_, TCPS_DELETE_KEY};

tcps_op_t tcps_v1_op(uint8_t byte)
{
    if (byte == TCPS_PING) /* herd's extension: the upgrade */
        return TCPS_PING;
    return byte < sizeof(v1_ops) / sizeof(v1_ops[0]) ? v1_ops[byte]
                                                     : TCPS_OP_MAX_;
}

int tcps_v1_code(tcps_op_t op)
{
    for (size_t i = 0; i < sizeof(v1_ops) / sizeof(v1_ops[0]); i++)
        if (v1_ops[i] == op)
            return (int)i;
    return -1;
}

static store_frame_result_t decode(const uint8_t *buf, size_t len, int v1,
                                   tcps_req_t *req, size_t *used, size_t *need,
                                   char *why, size_t whylen)
{
    cursor_t c = {.buf = buf, .len = len, .why = why, .whylen = whylen};
    tcps_req_t q;
    memset(&q, 0, sizeof(q));
    if (need)
        *need = 0;
    uint8_t byte = (uint8_t)take_u(&c, 1);
    if (c.partial)
        return STORE_FRAME_PARTIAL;
    q.op = v1 ? tcps_v1_op(byte) : (tcps_op_t)byte;
    if (v1 && byte == TCPS_V1_WATCH_KEY) {
        snprintf(why, whylen, "watch_key (torch 1.x) is not supported");
        return STORE_FRAME_BAD;
    }
    if (v1 && q.op == TCPS_OP_MAX_) {
        snprintf(why, whylen, "unknown TCPStore (torch 1.x) command %u",
                 (unsigned)byte);
        return STORE_FRAME_BAD;
    }
    switch (q.op) {
    case TCPS_SET:
    case TCPS_APPEND:
        q.key = take_str(&c, STORE_MAX_KEY, "a key", &q.klen);
        q.val = take_str(&c, STORE_MAX_VALUE, "a value", &q.vlen);
        break;
    case TCPS_COMPARE_SET:
        q.key = take_str(&c, STORE_MAX_KEY, "a key", &q.klen);
        q.val = take_str(&c, STORE_MAX_VALUE, "a value", &q.vlen);
        q.val2 = take_str(&c, STORE_MAX_VALUE, "a value", &q.vlen2);
        break;
    case TCPS_GET:
    case TCPS_DELETE_KEY:
        q.key = take_str(&c, STORE_MAX_KEY, "a key", &q.klen);
        break;
    case TCPS_ADD:
        q.key = take_str(&c, STORE_MAX_KEY, "a key", &q.klen);
        q.num = (int64_t)take_u(&c, 8);
        break;
    case TCPS_CHECK:
    case TCPS_WAIT:
    case TCPS_MULTI_GET:
        take_list(&c, &q, 0);
        break;
    case TCPS_MULTI_SET:
        take_list(&c, &q, 1);
        break;
    case TCPS_PING:
    case TCPS_VALIDATE:
        q.num = (int64_t)take_u(&c, 4);
        break;
    case TCPS_GETNUMKEYS:
    case TCPS_CANCEL_WAIT:
        break;
    default:
        snprintf(why, whylen, "unknown TCPStore command %u", (unsigned)q.op);
        return STORE_FRAME_BAD;
    }
    if (!c.bad && c.off > (size_t)STORE_MAX_FRAME) {
        c.bad = 1;
        snprintf(why, whylen, "TCPStore %s of at least %zu bytes (limit %u)",
                 tcps_op_name(q.op), c.off, STORE_MAX_FRAME);
    }
    if (c.bad)
        return STORE_FRAME_BAD;
    if (c.partial) {
        if (need)
            *need = c.off;
        return STORE_FRAME_PARTIAL;
    }
    *req = q;
    *used = c.off;
    return STORE_FRAME_OK;
}

store_frame_result_t tcps_decode(const uint8_t *buf, size_t len,
                                 tcps_req_t *req, size_t *used, size_t *need,
                                 char *why, size_t whylen)
{
    return decode(buf, len, 0, req, used, need, why, whylen);
}

store_frame_result_t tcps_decode_v1(const uint8_t *buf, size_t len,
                                    tcps_req_t *req, size_t *used, size_t *need,
                                    char *why, size_t whylen)
{
    return decode(buf, len, 1, req, used, need, why, whylen);
}

const uint8_t *tcps_list_next(const uint8_t **p, size_t *left, size_t *len)
{
    *len = (size_t)le(*p, 8);
    const uint8_t *s = *p + 8;
    *p = s + *len;
    *left -= 8 + *len;
    return s;
}
