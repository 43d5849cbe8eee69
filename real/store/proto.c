/* real/store/proto.c - encoding and bounds-checked decoding of the
 * store's frames (see proto.h for the format), and the request decoder
 * the server runs on every frame (a pure function: the fuzz target's). */
#include "real/store/proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void store_wbuf_init(store_wbuf_t *w)
{
    memset(w, 0, sizeof(*w));
}

void store_wbuf_free(store_wbuf_t *w)
{
    free(w->data);
    memset(w, 0, sizeof(*w));
}

static uint8_t *wbuf_grow(store_wbuf_t *w, size_t n)
{
    if (w->failed)
        return NULL;
    if (w->cap - w->len < n) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->len < n)
            cap *= 2;
        uint8_t *d = realloc(w->data, cap);
        if (!d) {
            w->failed = 1;
            return NULL;
        }
        w->data = d;
        w->cap = cap;
    }
    uint8_t *p = w->data + w->len;
    w->len += n;
    return p;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint32_t store_le32(const uint8_t *p)
{
    return (uint32_t)get_le(p, 4);
}

void store_wbuf_u8(store_wbuf_t *w, uint8_t v)
{
    uint8_t *p = wbuf_grow(w, 1);
    if (p)
        *p = v;
}

void store_wbuf_i32(store_wbuf_t *w, int32_t v)
{
    uint8_t *p = wbuf_grow(w, 4);
    if (p)
        put_le(p, (uint32_t)v, 4);
}

void store_wbuf_i64(store_wbuf_t *w, int64_t v)
{
    uint8_t *p = wbuf_grow(w, 8);
    if (p)
        put_le(p, (uint64_t)v, 8);
}

void store_wbuf_raw(store_wbuf_t *w, const void *src, size_t n)
{
    uint8_t *p = wbuf_grow(w, n);
    if (p && n)
        memcpy(p, src, n);
}

void store_wbuf_bytes(store_wbuf_t *w, const void *src, size_t n)
{
    store_wbuf_i64(w, (int64_t)n);
    store_wbuf_raw(w, src, n);
}

void store_wbuf_begin(store_wbuf_t *w)
{
    w->len = 0;
    wbuf_grow(w, 4);
}

void store_wbuf_end(store_wbuf_t *w)
{
    if (!w->failed)
        put_le(w->data, (uint64_t)(w->len - 4), 4);
}

void store_rbuf_init(store_rbuf_t *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->off = 0;
    r->bad = 0;
}

static const uint8_t *rbuf_take(store_rbuf_t *r, size_t n)
{
    if (r->bad || r->len - r->off < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t store_rbuf_u8(store_rbuf_t *r)
{
    const uint8_t *p = rbuf_take(r, 1);
    return p ? *p : 0;
}

int32_t store_rbuf_i32(store_rbuf_t *r)
{
    const uint8_t *p = rbuf_take(r, 4);
    return p ? (int32_t)(uint32_t)get_le(p, 4) : 0;
}

int64_t store_rbuf_i64(store_rbuf_t *r)
{
    const uint8_t *p = rbuf_take(r, 8);
    return p ? (int64_t)get_le(p, 8) : 0;
}

const uint8_t *store_rbuf_bytes(store_rbuf_t *r, size_t max, size_t *len_out)
{
    int64_t n = store_rbuf_i64(r);
    if (r->bad || n < 0 || (uint64_t)n > max) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = rbuf_take(r, (size_t)n);
    if (!p)
        return NULL;
    *len_out = (size_t)n;
    return p;
}

/* ---- request frames --------------------------------------------------- */

static const char *const op_names[STORE_OP_MAX_] = {
    [STORE_OP_AUTH] = "auth",         [STORE_OP_SET] = "set",
    [STORE_OP_GET] = "get",           [STORE_OP_ADD] = "add",
    [STORE_OP_CAS] = "compare_set",   [STORE_OP_WAIT] = "wait",
    [STORE_OP_CHECK] = "check",       [STORE_OP_DELETE] = "delete",
    [STORE_OP_NUM_KEYS] = "num_keys",
};

const char *store_op_name(int op)
{
    return op > 0 && op < STORE_OP_MAX_ ? op_names[op] : "?";
}

static store_frame_result_t frame_bad(char *why, size_t whylen, const char *fmt,
                                      ...)
    __attribute__((format(printf, 3, 4)));
static store_frame_result_t frame_bad(char *why, size_t whylen, const char *fmt,
                                      ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return STORE_FRAME_BAD;
}

/* The fields of `op` from r into q; 0 when they do not fit the limits. */
static int decode_fields(store_rbuf_t *r, store_req_t *q)
{
    switch (q->op) {
    case STORE_OP_AUTH:
        q->val = store_rbuf_bytes(r, STORE_MAX_TOKEN, &q->vlen);
        break;
    case STORE_OP_SET:
        q->key = store_rbuf_bytes(r, STORE_MAX_KEY, &q->klen);
        q->val = store_rbuf_bytes(r, STORE_MAX_VALUE, &q->vlen);
        break;
    case STORE_OP_GET:
    case STORE_OP_ADD:
        q->key = store_rbuf_bytes(r, STORE_MAX_KEY, &q->klen);
        q->num = store_rbuf_i64(r);
        break;
    case STORE_OP_CAS:
        q->key = store_rbuf_bytes(r, STORE_MAX_KEY, &q->klen);
        q->val = store_rbuf_bytes(r, STORE_MAX_VALUE, &q->vlen);
        q->val2 = store_rbuf_bytes(r, STORE_MAX_VALUE, &q->vlen2);
        break;
    case STORE_OP_WAIT:
    case STORE_OP_CHECK:
        q->nkeys = store_rbuf_i64(r);
        if (q->nkeys < 1 || q->nkeys > (int64_t)STORE_MAX_WAIT_KEYS)
            return 0;
        q->keys = r->p + r->off;
        for (int64_t i = 0; i < q->nkeys && !r->bad; i++) {
            size_t kl;
            store_rbuf_bytes(r, STORE_MAX_KEY, &kl);
        }
        q->keys_len = r->bad ? 0 : (size_t)(r->p + r->off - q->keys);
        if (q->op == STORE_OP_WAIT)
            q->num = store_rbuf_i64(r);
        break;
    case STORE_OP_DELETE:
        q->key = store_rbuf_bytes(r, STORE_MAX_KEY, &q->klen);
        break;
    default: /* num_keys: no fields */
        break;
    }
    return !r->bad;
}

store_frame_result_t store_frame_decode(const uint8_t *buf, size_t len,
                                        size_t max_body, store_req_t *req,
                                        size_t *used, size_t *need, char *why,
                                        size_t whylen)
{
    if (need)
        *need = 0;
    if (len < 4)
        return STORE_FRAME_PARTIAL;
    uint32_t n = store_le32(buf);
    if (n == 0 || n > max_body)
        return frame_bad(why, whylen, "frame of %u bytes (limit %zu)", n,
                         max_body);
    if (need)
        *need = 4 + (size_t)n;
    if (len - 4 < n)
        return STORE_FRAME_PARTIAL;
    store_rbuf_t r;
    store_rbuf_init(&r, buf + 4, n);
    store_req_t q;
    memset(&q, 0, sizeof(q));
    uint8_t op = store_rbuf_u8(&r);
    if (op == 0 || op >= STORE_OP_MAX_)
        return frame_bad(why, whylen, "unknown request type %u", op);
    q.op = (store_op_t)op;
    if (!decode_fields(&r, &q) || r.off != r.len)
        return frame_bad(why, whylen, "malformed %s request (%u bytes)",
                         op_names[op], n);
    *req = q;
    *used = 4 + (size_t)n;
    return STORE_FRAME_OK;
}

void store_req_keys(const store_req_t *q, const uint8_t **keys, size_t *klens)
{
    store_rbuf_t r;
    store_rbuf_init(&r, q->keys, q->keys_len);
    for (int64_t i = 0; i < q->nkeys; i++)
        keys[i] = store_rbuf_bytes(&r, STORE_MAX_KEY, &klens[i]);
}

int store_token_equal(const uint8_t *got, size_t glen, const char *want)
{
    size_t wlen = strlen(want);
    unsigned diff = glen != wlen;
    /* Every byte of `want` is read whatever `got` holds: no early exit. */
    for (size_t i = 0; i < wlen; i++)
        diff |= (unsigned)(want[i] ^ (i < glen ? got[i] : 0));
    return diff == 0;
}
