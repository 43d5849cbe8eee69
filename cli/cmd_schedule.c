/* cli/cmd_schedule.c - `herd schedule`: lower one collective with one
 * algorithm and print every rank's schedule (or one rank's), optionally
 * verifying it symbolically. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/engine.h"
#include "core/sched.h"
#include "sim/sim.h"

static const char usage[] =
    "usage: herd schedule [options]\n"
    "Print the per-rank schedule (send / recv / recv_reduce / copy steps\n"
    "with their element ranges and dependencies) of one collective.\n\n"
    "  --algo A            auto, ring, tree, rhd, direct, binomial, hier, rd,\n"
    "                      gloo (PyTorch's gloo backend, as the simulator\n"
    "                      models it) (default auto: chosen by size)\n"
    "  --coll C            all_reduce, broadcast, reduce, all_gather, "
    "gather,\n"
    "                      scatter, reduce_scatter, all_to_all, barrier\n"
    "                      (default all_reduce)\n"
    "  -p, --nranks N      group size (default 8)\n"
    "  --count N           elements per rank, as in the call (default 64)\n"
    "  --dtype T           element type (default float32)\n"
    "  --channels C        parallel channels (default 1)\n"
    "  --chunk BYTES       pipeline chunk size, e.g. 4MiB (default 0: none)\n"
    "  --root R            root of broadcast/reduce/gather/scatter "
    "(default 0)\n"
    "  --ranks-per-node N  node size for hier (default: one node)\n"
    "  --inter A           hier's inter-node part: ring (default) or tree\n"
    "  --rank R            print only rank R (default: every rank)\n"
    "  --verify            also check the schedule symbolically (exit 1 if "
    "it\n"
    "                      is wrong)\n"
    "  -h, --help          this text\n";

typedef struct sched_opts {
    core_sched_desc_t d;
    int only_rank;
    int verify;
} sched_opts_t;

static int parse_value(const char *flag, const char *val, sched_opts_t *o)
{
    long v;
    uint64_t b;
    core_sched_desc_t *d = &o->d;
    if (!strcmp(flag, "--algo"))
        return herd_algo_parse(val, &d->algo) == HERD_OK ? 0 : -1;
    if (!strcmp(flag, "--inter")) {
        herd_algo_t a;
        if (herd_algo_parse(val, &a) != HERD_OK ||
            (a != HERD_ALGO_RING && a != HERD_ALGO_TREE))
            return -1;
        d->hier_inter = a;
        return 0;
    }
    if (!strcmp(flag, "--coll")) {
        herd_coll_t c;
        /* the *_v kinds need a count per rank, which this tool does not
         * take (tests/unit_sched_v.c verifies them) */
        if (herd_coll_parse(val, &c) != HERD_OK || c == HERD_COLL_SEND ||
            c == HERD_COLL_RECV || core_coll_is_v(c))
            return -1;
        d->coll = c;
        return 0;
    }
    if (!strcmp(flag, "--dtype")) {
        herd_dtype_t t;
        if (herd_dtype_parse(val, &t) != HERD_OK)
            return -1;
        d->elem_size = herd_dtype_size(t);
        return 0;
    }
    if (!strcmp(flag, "--count") || !strcmp(flag, "--chunk")) {
        if (cli_parse_bytes(val, &b))
            return -1;
        if (!strcmp(flag, "--count"))
            d->count = b;
        else
            d->chunk_bytes = b;
        return 0;
    }
    if (cli_parse_int(val, 0, 1 << 20, &v))
        return -1;
    if (!strcmp(flag, "-p") || !strcmp(flag, "--nranks"))
        d->nranks = (int)v;
    else if (!strcmp(flag, "--channels"))
        d->channels = (int)v;
    else if (!strcmp(flag, "--root"))
        d->root = (int)v;
    else if (!strcmp(flag, "--ranks-per-node"))
        d->ranks_per_node = (int)v;
    else if (!strcmp(flag, "--rank"))
        o->only_rank = (int)v;
    else
        return -2;
    return 0;
}

static int parse_args(int argc, char **argv, sched_opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *val = NULL, *arg = argv[i];
        if (!strcmp(arg, "--verify")) {
            o->verify = 1;
            continue;
        }
        const char *eq = strchr(arg, '=');
        size_t fl = eq ? (size_t)(eq - arg) : strlen(arg);
        if (fl >= sizeof(flag) || arg[0] != '-')
            return cli_usage_error("schedule", "unexpected argument '%s'", arg);
        memcpy(flag, arg, fl);
        flag[fl] = '\0';
        val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val)
            return cli_usage_error("schedule", "option %s needs a value", flag);
        int rc = parse_value(flag, val, o);
        if (rc == -2)
            return cli_usage_error("schedule",
                                   "unknown option '%s' (see --help)", flag);
        if (rc)
            return cli_usage_error("schedule", "bad value '%s' for %s", val,
                                   flag);
    }
    return 0;
}

static int check_opts(sched_opts_t *o)
{
    core_sched_desc_t *d = &o->d;
    if (d->nranks < 1)
        return cli_usage_error("schedule", "-p must be at least 1");
    if (d->channels < 1 || d->channels > 65535)
        return cli_usage_error("schedule", "--channels must be in 1..65535");
    if (o->only_rank >= d->nranks)
        return cli_usage_error("schedule", "--rank %d out of range [0, %d)",
                               o->only_rank, d->nranks);
    if (d->root >= d->nranks)
        return cli_usage_error("schedule", "--root %d out of range [0, %d)",
                               d->root, d->nranks);
    if (d->algo == HERD_ALGO_AUTO)
        d->algo = core_sched_pick(d->coll, d->nranks, d->count * d->elem_size);
    if (d->algo != HERD_ALGO_GLOO && !core_sched_supports(d->algo, d->coll)) {
        char list[256] = "";
        for (int a = HERD_ALGO_RING; a < HERD_ALGO_COUNT; a++)
            if (core_sched_supports((herd_algo_t)a, d->coll)) {
                strcat(list, list[0] ? ", " : "");
                strcat(list, herd_algo_name((herd_algo_t)a));
            }
        return cli_usage_error("schedule",
                               "algorithm '%s' does not implement %s "
                               "(available: %s)",
                               herd_algo_name(d->algo), herd_coll_name(d->coll),
                               list);
    }
    if (d->algo == HERD_ALGO_HIER && d->ranks_per_node > 0 &&
        d->nranks % d->ranks_per_node != 0)
        return cli_usage_error("schedule",
                               "--ranks-per-node %d does not divide -p %d",
                               d->ranks_per_node, d->nranks);
    return 0;
}

/* gloo's schedules come from the simulator's model of it */
static core_sched_lower_fn lower_of(const core_sched_desc_t *d)
{
    return d->algo == HERD_ALGO_GLOO ? sim_gloo_lower : core_sched_lower;
}

static int print_ranks(const sched_opts_t *o)
{
    core_sched_desc_t d = o->d;
    for (int r = 0; r < d.nranks; r++) {
        if (o->only_rank >= 0 && r != o->only_rank)
            continue;
        core_sched_t s = {0};
        d.rank = r;
        herd_status_t st = lower_of(&d)(&d, &s);
        if (st != HERD_OK) {
            fprintf(stderr, "herd schedule: lowering rank %d failed: %s\n", r,
                    herd_status_string(st));
            return st == HERD_ERR_INVALID_ARG || st == HERD_ERR_UNSUPPORTED ? 2
                                                                            : 1;
        }
        core_sched_print(&s, stdout);
        core_sched_fini(&s);
    }
    return 0;
}

int cli_schedule_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    sched_opts_t o = {.d = {.coll = HERD_COLL_ALL_REDUCE,
                            .algo = HERD_ALGO_AUTO,
                            .nranks = 8,
                            .count = 64,
                            .elem_size = 4,
                            .channels = 1},
                      .only_rank = -1};
    int rc = parse_args(argc, argv, &o);
    if (rc == 0)
        rc = check_opts(&o);
    if (rc == 0)
        rc = print_ranks(&o);
    if (rc == 0 && o.verify) {
        char why[1024];
        herd_status_t st =
            core_sched_verify(&o.d, lower_of(&o.d), why, sizeof(why));
        printf("# verify: %s%s\n",
               st == HERD_OK ? "ok" : "FAILED: ", st == HERD_OK ? "" : why);
        rc = st == HERD_OK ? 0 : 1;
    }
    return rc;
}
