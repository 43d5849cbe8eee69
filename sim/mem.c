/* sim/mem.c - the simulator's memory budget: a world that cannot fit is
 * refused before it starts (ranks × the measured cost of a rank), and a
 * run whose collective state outgrows the machine ends with a partial
 * report (herd_status HERD_ERR_NO_MEMORY) instead of meeting the kernel's
 * out-of-memory killer, which would lose the whole run without a word.
 *
 * The budget is the process's resident size when the world is built plus
 * 90 % of MemAvailable then (the rest left to the system and to whatever
 * the program frees late), divided by HERD_SIM_MEM_SHARE when set (herd
 * sweep --jobs N sets N in its workers: N simulations at once must not
 * each count on all of it), or HERD_SIM_MEM_LIMIT_MIB when set (tests,
 * and users who share the machine). The check reads the peak resident size
 * (getrusage, no file to parse) every 4096 events, wherever they are
 * counted (one instant of the network can hold millions), and every 256
 * posts; past the limit no new work starts, so the run stops within a
 * few MiB of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim/sim.h"

/* What a rank costs before any collective's state: its record,
 * communicator and the stack page a collective-only program touches
 * (measured: 7.4 KiB per rank for one all_reduce at 131,072 ranks, 7.6 for
 * herd perf; docs/simulator.md, "Cost and limits"), rounded up. */
#define SIM_RANK_BYTES_EST (8u << 10)

/* MemAvailable in bytes, or 0 when unknown. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb << 10;
}

/* Peak resident size of this process in bytes. */
static uint64_t rss_peak(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss << 10; /* Linux: KiB */
}

/* "1.25 GiB", or "96.0 MiB" under a GiB: a small limit stays readable. */
static const char *size_str(uint64_t b, char *buf, size_t len)
{
    if (b >= (1u << 30))
        snprintf(buf, len, "%.2f GiB", (double)b / (double)(1u << 30));
    else
        snprintf(buf, len, "%.1f MiB", (double)b / (double)(1u << 20));
    return buf;
}

static void set_report(herd_run_info_t *info, const char *s)
{
    if (!info)
        return;
    free(info->report);
    info->report = strdup(s);
}

/* A whole number in [1, max] from the environment variable `name`: 0
 * when unset, -1 (with the report) when malformed. */
static long long env_count(const char *name, unsigned long long max,
                           const char *what, herd_run_info_t *info)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return 0;
    char *end = NULL;
    unsigned long long v = strtoull(env, &end, 10);
    if (*end || *env == '-' || v == 0 || v > max) {
        char buf[200];
        snprintf(buf, sizeof(buf), "sim: %s='%.40s' is not %s", name, env,
                 what);
        set_report(info, buf);
        return -1;
    }
    return (long long)v;
}

herd_status_t sim_mem_init(sim_world_t *w, herd_run_info_t *info)
{
    uint64_t rss = rss_peak(), budget = 0;
    long long mib =
        env_count("HERD_SIM_MEM_LIMIT_MIB", 1ull << 40,
                  "a size in MiB (a whole number, at least 1)", info);
    long long share = env_count("HERD_SIM_MEM_SHARE", 4096,
                                "a number of simulations sharing the "
                                "memory (1..4096)",
                                info);
    if (mib < 0 || share < 0)
        return HERD_ERR_INVALID_ARG;
    if (mib > 0) {
        w->mem_limit = (uint64_t)mib << 20;
        w->mem_what = "HERD_SIM_MEM_LIMIT_MIB";
    } else if ((budget = mem_available()) > 0) {
        w->mem_limit = rss + budget / 10 * 9 / (uint64_t)(share ? share : 1);
        w->mem_what = share > 1 ? "90% of MemAvailable at the start, shared "
                                  "by HERD_SIM_MEM_SHARE simulations"
                                : "90% of MemAvailable at the start";
    }
    if (!w->mem_limit)
        return HERD_OK; /* unknown: no guard */
    uint64_t need = (uint64_t)w->n * SIM_RANK_BYTES_EST;
    uint64_t room = w->mem_limit > rss ? w->mem_limit - rss : 0;
    if (need <= room)
        return HERD_OK;
    char buf[400], a[32], b[32], c[32];
    snprintf(buf, sizeof(buf),
             "sim: a world of %d ranks needs at least %s (about %u KiB per "
             "rank before any collective's state) and %s are left under the "
             "limit of %s (%s): simulate fewer ranks or use a machine with "
             "more memory",
             w->n, size_str(need, a, sizeof(a)), SIM_RANK_BYTES_EST >> 10,
             size_str(room, b, sizeof(b)), size_str(w->mem_limit, c, sizeof(c)),
             w->mem_what);
    set_report(info, buf);
    return HERD_ERR_NO_MEMORY;
}

int sim_mem_over(sim_world_t *w)
{
    if (!w->mem_limit || w->mem_over)
        return w->mem_over;
    uint64_t rss = rss_peak();
    if (rss <= w->mem_limit)
        return 0;
    w->mem_over = 1;
    w->mem_seen = rss;
    if (w->end_status == HERD_OK)
        w->end_status = HERD_ERR_NO_MEMORY;
    return 1;
}

void sim_mem_text(FILE *f, const sim_world_t *w)
{
    char a[32], b[32];
    fprintf(f,
            "herd sim: stopped at t=%.9f s (%llu events): the simulation "
            "reached %s of memory, past its limit of %s (%s); the "
            "collectives' state grows with ranks x members "
            "(docs/simulator.md, \"Cost and limits\"): simulate fewer ranks, "
            "an algorithm the symmetry shortcut covers, or set "
            "HERD_SIM_MEM_LIMIT_MIB; a partial report\n",
            w->now / 1e9, (unsigned long long)w->events,
            size_str(w->mem_seen, a, sizeof(a)),
            size_str(w->mem_limit, b, sizeof(b)), w->mem_what);
}
