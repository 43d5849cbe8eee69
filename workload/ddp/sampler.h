/* workload/ddp/sampler.h - torch.utils.data.DistributedSampler, and the data
 * layouts that give ranks different numbers of batches.
 *
 * DistributedSampler pads (repeating indices from the start, cycling when
 * the padding exceeds the dataset) or truncates (drop_last) so every rank
 * gets the same num_samples, then rank r takes indices r, r+R, ... of the
 * padded list. Per-rank shards (an IterableDataset split by rank, or
 * files of different lengths) do not: their ranks run different numbers of
 * steps, which hangs a real DDP job. */
#ifndef HERD_WORKLOAD_DDP_SAMPLER_H
#define HERD_WORKLOAD_DDP_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

typedef struct ddp_sampler {
    uint64_t dataset_size; /* N */
    int replicas;          /* R (world size) */
    int drop_last;         /* the sampler's drop_last */
    int shuffle;           /* permute with `seed + epoch` (herd's own RNG) */
    uint64_t seed;
    uint64_t epoch;
} ddp_sampler_t;

/* ceil(N / R), or floor(N / R) with drop_last when N % R != 0. */
uint64_t ddp_sampler_num_samples(const ddp_sampler_t *s);
/* num_samples * R. */
uint64_t ddp_sampler_total_size(const ddp_sampler_t *s);

/* The dataset indices rank `rank` visits, in order: ddp_sampler_num_samples
 * entries written to `out` (the caller sizes it). Without shuffle this is
 * exactly torch's list. */
herd_status_t ddp_sampler_indices(const ddp_sampler_t *s, int rank,
                                  uint64_t *out);

/* Batches a DataLoader yields from `samples` samples. */
uint64_t ddp_loader_batches(uint64_t samples, uint64_t batch_size,
                            int loader_drop_last);

/* Samples of rank `rank` when the dataset is split into contiguous
 * per-rank shards without padding (IterableDataset style): the first
 * N % R ranks get one more. */
uint64_t ddp_shard_samples(uint64_t dataset_size, int replicas, int rank);

#endif
