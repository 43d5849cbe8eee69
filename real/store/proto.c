/* real/store/proto.c - encoding and bounds-checked decoding of the
 * store's frames (see proto.h for the format). */
#include "real/store/proto.h"

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
