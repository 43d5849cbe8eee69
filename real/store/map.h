/* real/store/map.h - the key-value table behind the store server and the
 * file store: byte-string keys and values, chained hashing. */
#ifndef HERD_REAL_STORE_MAP_H
#define HERD_REAL_STORE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

typedef struct store_map store_map_t;

typedef struct store_entry {
    char *key; /* NUL-terminated copy */
    size_t klen;
    void *val; /* NUL-terminated past vlen */
    size_t vlen;
    struct store_entry *next;
} store_entry_t;

herd_status_t store_map_create(store_map_t **out);
void store_map_destroy(store_map_t *m);
/* NULL when the key is missing. */
store_entry_t *store_map_get(const store_map_t *m, const void *key,
                             size_t klen);
/* Insert or overwrite (the value is copied). */
herd_status_t store_map_put(store_map_t *m, const void *key, size_t klen,
                            const void *val, size_t vlen);
/* 1 if the key existed. */
int store_map_del(store_map_t *m, const void *key, size_t klen);
size_t store_map_count(const store_map_t *m);

/* torch's TCPStore semantics on a table, shared by the server and the
 * file store. add: a missing key counts as 0, the value is kept as
 * decimal text; HERD_ERR_PARSE if the current value is not an integer. */
herd_status_t store_map_add(store_map_t *m, const void *key, size_t klen,
                            int64_t delta, int64_t *value_out);
/* compare_set: missing + empty expected -> set; missing + other expected
 * -> expected; equal -> set; different -> current. *cur_out points at the
 * value after the call (into the table or into `expected`). */
herd_status_t store_map_cas(store_map_t *m, const void *key, size_t klen,
                            const void *exp, size_t elen, const void *des,
                            size_t dlen, const void **cur_out,
                            size_t *curlen_out);

/* A malloc'd, NUL-terminated copy of n bytes (how the table keeps keys
 * and values; the client and file store copy values out the same way). */
void *store_dup_bytes(const void *p, size_t n);

#endif
