/* workload/ddp/sampler.c - DistributedSampler's arithmetic and index lists, and
 * unpadded per-rank shards. */
#include "workload/ddp/sampler.h"

#include <stdlib.h>

uint64_t ddp_sampler_num_samples(const ddp_sampler_t *s)
{
    uint64_t n = s->dataset_size, r = (uint64_t)s->replicas;
    if (r == 0)
        return 0;
    if (s->drop_last && n % r != 0)
        return n / r; /* == ceil((n - r) / r) */
    return (n + r - 1) / r;
}

uint64_t ddp_sampler_total_size(const ddp_sampler_t *s)
{
    return ddp_sampler_num_samples(s) * (uint64_t)s->replicas;
}

/* splitmix64: a small seeded generator for the shuffled order (torch's
 * randperm stream is not reproduced). */
static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void base_order(const ddp_sampler_t *s, uint64_t *perm)
{
    uint64_t n = s->dataset_size, state = s->seed + s->epoch;
    for (uint64_t i = 0; i < n; i++)
        perm[i] = i;
    if (!s->shuffle)
        return;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = mix(&state) % i, t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

herd_status_t ddp_sampler_indices(const ddp_sampler_t *s, int rank,
                                  uint64_t *out)
{
    if (!s || !out || s->replicas <= 0 || rank < 0 || rank >= s->replicas ||
        s->dataset_size == 0)
        return HERD_ERR_INVALID_ARG;
    uint64_t n = s->dataset_size, total = ddp_sampler_total_size(s);
    uint64_t *perm = malloc(n * sizeof(uint64_t));
    if (!perm)
        return HERD_ERR_NO_MEMORY;
    base_order(s, perm);
    /* Padded list: perm, then perm repeated from its start (cycling);
     * truncated to total when drop_last. Rank r takes r, r+R, ... */
    uint64_t k = 0;
    for (uint64_t i = (uint64_t)rank; i < total; i += (uint64_t)s->replicas)
        out[k++] = perm[i % n];
    free(perm);
    return HERD_OK;
}

uint64_t ddp_loader_batches(uint64_t samples, uint64_t batch_size,
                            int loader_drop_last)
{
    if (batch_size == 0)
        return 0;
    return loader_drop_last ? samples / batch_size
                            : (samples + batch_size - 1) / batch_size;
}

uint64_t ddp_shard_samples(uint64_t dataset_size, int replicas, int rank)
{
    if (replicas <= 0 || rank < 0 || rank >= replicas)
        return 0;
    uint64_t r = (uint64_t)replicas;
    return dataset_size / r + ((uint64_t)rank < dataset_size % r ? 1 : 0);
}
