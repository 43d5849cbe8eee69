/* sim/htab.c - an open-addressing hash map from 64-bit keys to non-NULL
 * pointers (linear probing, backward-shift deletion), used for collective
 * instances, point-to-point queues and schedule connections. */
#include <stdlib.h>

#include "sim/sim.h"

uint64_t sim_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* Fibonacci hashing: one multiply, the top bits pick the slot. Keys here
 * are small structured integers, which it spreads well. */
static size_t home_of(const sim_htab_t *h, uint64_t key)
{
    int bits = __builtin_ctzll((unsigned long long)h->cap);
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

static size_t slot_of(const sim_htab_t *h, uint64_t key)
{
    size_t mask = h->cap - 1;
    size_t i = home_of(h, key);
    while (h->vals[i] && h->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

void *sim_htab_get(const sim_htab_t *h, uint64_t key)
{
    if (h->cap == 0)
        return NULL;
    return h->vals[slot_of(h, key)];
}

static herd_status_t grow(sim_htab_t *h)
{
    size_t cap = h->cap ? h->cap * 2 : 16;
    sim_htab_t g = {.keys = calloc(cap, sizeof(uint64_t)),
                    .vals = calloc(cap, sizeof(void *)),
                    .cap = cap};
    if (!g.keys || !g.vals) {
        free(g.keys);
        free(g.vals);
        return HERD_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < h->cap; i++)
        if (h->vals[i]) {
            size_t j = slot_of(&g, h->keys[i]);
            g.keys[j] = h->keys[i];
            g.vals[j] = h->vals[i];
            g.n++;
        }
    sim_htab_fini(h);
    *h = g;
    return HERD_OK;
}

herd_status_t sim_htab_put(sim_htab_t *h, uint64_t key, void *val)
{
    if ((h->n + 1) * 4 > h->cap * 3) {
        herd_status_t st = grow(h);
        if (st != HERD_OK)
            return st;
    }
    size_t i = slot_of(h, key);
    if (!h->vals[i])
        h->n++;
    h->keys[i] = key;
    h->vals[i] = val;
    return HERD_OK;
}

void sim_htab_del(sim_htab_t *h, uint64_t key)
{
    if (h->cap == 0)
        return;
    size_t mask = h->cap - 1;
    size_t i = slot_of(h, key);
    if (!h->vals[i])
        return;
    h->vals[i] = NULL;
    h->n--;
    /* Shift later members of the probe run back so lookups stay exact. */
    for (size_t j = (i + 1) & mask; h->vals[j]; j = (j + 1) & mask) {
        size_t home = home_of(h, h->keys[j]);
        int movable =
            (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            h->keys[i] = h->keys[j];
            h->vals[i] = h->vals[j];
            h->vals[j] = NULL;
            i = j;
        }
    }
}

void sim_htab_fini(sim_htab_t *h)
{
    free(h->keys);
    free(h->vals);
    h->keys = NULL;
    h->vals = NULL;
    h->cap = h->n = 0;
}
