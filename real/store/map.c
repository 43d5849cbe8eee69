/* real/store/map.c - a chained hash table of byte strings (FNV-1a),
 * doubling when the load factor passes 1. */
#include "real/store/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct store_map {
    store_entry_t **slots;
    size_t nslots, count;
};

static uint64_t map_hash(const void *key, size_t klen)
{
    const uint8_t *p = key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < klen; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

herd_status_t store_map_create(store_map_t **out)
{
    store_map_t *m = calloc(1, sizeof(*m));
    if (!m)
        return HERD_ERR_NO_MEMORY;
    m->nslots = 64;
    m->slots = calloc(m->nslots, sizeof(*m->slots));
    if (!m->slots) {
        free(m);
        return HERD_ERR_NO_MEMORY;
    }
    *out = m;
    return HERD_OK;
}

static void entry_free(store_entry_t *e)
{
    free(e->key);
    free(e->val);
    free(e);
}

void store_map_destroy(store_map_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nslots; i++) {
        store_entry_t *e = m->slots[i];
        while (e) {
            store_entry_t *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    free(m->slots);
    free(m);
}

static store_entry_t **map_find(const store_map_t *m, const void *key,
                                size_t klen)
{
    store_entry_t **pp = &m->slots[map_hash(key, klen) % m->nslots];
    while (*pp && !((*pp)->klen == klen && !memcmp((*pp)->key, key, klen)))
        pp = &(*pp)->next;
    return pp;
}

store_entry_t *store_map_get(const store_map_t *m, const void *key, size_t klen)
{
    return *map_find(m, key, klen);
}

static void map_grow(store_map_t *m)
{
    size_t n = m->nslots * 2;
    store_entry_t **slots = calloc(n, sizeof(*slots));
    if (!slots)
        return; /* keep the longer chains; still correct */
    for (size_t i = 0; i < m->nslots; i++) {
        store_entry_t *e = m->slots[i];
        while (e) {
            store_entry_t *next = e->next;
            size_t j = map_hash(e->key, e->klen) % n;
            e->next = slots[j];
            slots[j] = e;
            e = next;
        }
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = n;
}

void *store_dup_bytes(const void *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

herd_status_t store_map_put(store_map_t *m, const void *key, size_t klen,
                            const void *val, size_t vlen)
{
    void *v = store_dup_bytes(val, vlen);
    if (!v)
        return HERD_ERR_NO_MEMORY;
    store_entry_t **pp = map_find(m, key, klen);
    if (*pp) {
        free((*pp)->val);
        (*pp)->val = v;
        (*pp)->vlen = vlen;
        return HERD_OK;
    }
    store_entry_t *e = calloc(1, sizeof(*e));
    char *k = store_dup_bytes(key, klen);
    if (!e || !k) {
        free(e);
        free(k);
        free(v);
        return HERD_ERR_NO_MEMORY;
    }
    e->key = k;
    e->klen = klen;
    e->val = v;
    e->vlen = vlen;
    *pp = e;
    if (++m->count > m->nslots)
        map_grow(m);
    return HERD_OK;
}

int store_map_del(store_map_t *m, const void *key, size_t klen)
{
    store_entry_t **pp = map_find(m, key, klen);
    if (!*pp)
        return 0;
    store_entry_t *e = *pp;
    *pp = e->next;
    entry_free(e);
    m->count--;
    return 1;
}

size_t store_map_count(const store_map_t *m)
{
    return m->count;
}
