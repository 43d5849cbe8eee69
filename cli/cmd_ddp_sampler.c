/* cli/cmd_ddp_sampler.c - `herd ddp sampler`: what DistributedSampler (or
 * unpadded per-rank shards) gives each rank, and whether the ranks run the
 * same number of steps (if not, a real DDP job hangs at the end of the
 * shortest rank's data). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "workload/ddp/sampler.h"

static const char usage[] =
    "usage: herd ddp sampler --dataset-size N --replicas R [--drop-last]\n"
    "         [--batch-size B] [--loader-drop-last] [--shards] [--shuffle]\n"
    "         [--seed S] [--epoch E] [--show-indices]\n"
    "Prints per rank its samples and batches as JSON. --shards splits the\n"
    "dataset into unpadded contiguous shards (IterableDataset style)\n"
    "instead of using DistributedSampler.\n";

typedef struct sampler_args {
    ddp_sampler_t s;
    uint64_t batch;
    int loader_drop_last, shards, show;
} sampler_args_t;

static int flag_value(sampler_args_t *a, const char *f, const char *v)
{
    long x;
    uint64_t b;
    if (!strcmp(f, "--dataset-size") && !cli_parse_bytes(v, &b) && b > 0)
        a->s.dataset_size = b;
    else if (!strcmp(f, "--replicas") && !cli_parse_int(v, 1, 1 << 24, &x))
        a->s.replicas = (int)x;
    else if (!strcmp(f, "--batch-size") && !cli_parse_bytes(v, &b) && b > 0)
        a->batch = b;
    else if (!strcmp(f, "--seed") && !cli_parse_bytes(v, &b))
        a->s.seed = b;
    else if (!strcmp(f, "--epoch") && !cli_parse_bytes(v, &b))
        a->s.epoch = b;
    else
        return cli_usage_error("ddp sampler", "bad option or value: %s %s", f,
                               v);
    return 0;
}

static int parse(int argc, char **argv, sampler_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->batch = 1;
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--drop-last"))
            a->s.drop_last = 1;
        else if (!strcmp(argv[i], "--loader-drop-last"))
            a->loader_drop_last = 1;
        else if (!strcmp(argv[i], "--shards"))
            a->shards = 1;
        else if (!strcmp(argv[i], "--shuffle"))
            a->s.shuffle = 1;
        else if (!strcmp(argv[i], "--show-indices"))
            a->show = 1;
        else if (i + 1 < argc)
            rc = flag_value(a, argv[i], argv[i + 1]), i++;
        else
            rc = cli_usage_error("ddp sampler", "bad option '%s'", argv[i]);
        if (rc)
            return rc;
    }
    if (!a->s.dataset_size || a->s.replicas <= 0)
        return cli_usage_error("ddp sampler", "--dataset-size and --replicas "
                                              "(both > 0) are required");
    return 0;
}

static json_t *rank_json(const sampler_args_t *a, int r, uint64_t *batches)
{
    uint64_t n = a->shards
                     ? ddp_shard_samples(a->s.dataset_size, a->s.replicas, r)
                     : ddp_sampler_num_samples(&a->s);
    *batches = ddp_loader_batches(n, a->batch, a->loader_drop_last);
    json_t *o = json_pack("{s:i,s:I,s:I}", "rank", r, "samples", (json_int_t)n,
                          "batches", (json_int_t)*batches);
    if (a->show && !a->shards && n > 0) {
        uint64_t *idx = malloc(n * sizeof(uint64_t));
        json_t *arr = json_array();
        if (idx && ddp_sampler_indices(&a->s, r, idx) == HERD_OK)
            for (uint64_t i = 0; i < n; i++)
                json_array_append_new(arr, json_integer((json_int_t)idx[i]));
        json_object_set_new(o, "indices", arr);
        free(idx);
    }
    return o;
}

int cli_ddp_sampler_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    sampler_args_t a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc;
    json_t *ranks = json_array();
    uint64_t lo = UINT64_MAX, hi = 0, b;
    for (int r = 0; r < a.s.replicas; r++) {
        json_array_append_new(ranks, rank_json(&a, r, &b));
        lo = b < lo ? b : lo;
        hi = b > hi ? b : hi;
    }
    json_t *o = json_pack(
        "{s:s,s:I,s:i,s:I,s:I,s:b,s:I,s:I,s:o}", "sampler",
        a.shards ? "shards" : "distributed", "dataset_size",
        (json_int_t)a.s.dataset_size, "replicas", a.s.replicas, "num_samples",
        (json_int_t)(a.shards ? 0 : ddp_sampler_num_samples(&a.s)),
        "total_size",
        (json_int_t)(a.shards ? a.s.dataset_size
                              : ddp_sampler_total_size(&a.s)),
        "even", lo == hi, "min_batches", (json_int_t)lo, "max_batches",
        (json_int_t)hi, "ranks", ranks);
    char *s = json_dumps(o, JSON_COMPACT);
    printf("%s\n", s ? s : "{}");
    if (lo != hi)
        fprintf(stderr,
                "herd ddp sampler: ranks run %llu to %llu steps: a DDP "
                "job hangs once the shortest rank runs out of data\n",
                (unsigned long long)lo, (unsigned long long)hi);
    free(s);
    json_decref(o);
    return 0;
}
