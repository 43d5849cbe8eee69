/* real/store/ops.c - the store's read-modify-write operations (add,
 * compare_set) on a table, so that the server and the file store answer
 * exactly alike. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/store/map.h"

static int parse_i64(const char *s, size_t len, int64_t *out)
{
    if (len == 0 || len > 24)
        return -1;
    char buf[32];
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

herd_status_t store_map_add(store_map_t *m, const void *key, size_t klen,
                            int64_t delta, int64_t *value_out)
{
    int64_t cur = 0;
    store_entry_t *e = store_map_get(m, key, klen);
    if (e && parse_i64(e->val, e->vlen, &cur) != 0)
        return HERD_ERR_PARSE;
    int64_t next;
    if (__builtin_add_overflow(cur, delta, &next))
        return HERD_ERR_OVERFLOW;
    char text[32];
    int n = snprintf(text, sizeof(text), "%" PRId64, next);
    herd_status_t st = store_map_put(m, key, klen, text, (size_t)n);
    if (st == HERD_OK)
        *value_out = next;
    return st;
}

herd_status_t store_map_cas(store_map_t *m, const void *key, size_t klen,
                            const void *exp, size_t elen, const void *des,
                            size_t dlen, const void **cur_out,
                            size_t *curlen_out)
{
    store_entry_t *e = store_map_get(m, key, klen);
    int do_set =
        e ? (e->vlen == elen && !memcmp(e->val, exp, elen)) : (elen == 0);
    if (!e && !do_set) {
        *cur_out = exp;
        *curlen_out = elen;
        return HERD_OK;
    }
    if (do_set) {
        herd_status_t st = store_map_put(m, key, klen, des, dlen);
        if (st != HERD_OK)
            return st;
        e = store_map_get(m, key, klen);
    }
    *cur_out = e->val;
    *curlen_out = e->vlen;
    return HERD_OK;
}
