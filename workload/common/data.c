/* workload/common/data.c - a scenario's data-loading settings and the
 * per-rank, per-batch load factor (data.h). */
#include "workload/common/data.h"

#include <math.h>
#include <stdlib.h>

wl_data_t wl_data_of(const trace_scenario_t *sc)
{
    wl_data_t d = {.cfg = sc->data,
                   .seed = sc->sim.seed,
                   .slow = sc->data_slow,
                   .nslow = sc->ndata_slow,
                   .compute = sc->rank_ovr,
                   .ncompute = sc->nrank_ovr};
    return d;
}

int wl_data_on(const wl_data_t *d)
{
    return d && d->cfg.load_s > 0;
}

/* splitmix64: a well-mixed 64-bit value from any input. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double uniform(uint64_t x)
{
    return ((double)(x >> 11) + 0.5) * 0x1.0p-53;
}

double wl_data_factor(const wl_data_t *d, int rank, long n)
{
    double f = 1;
    for (size_t i = 0; i < d->nslow; i++)
        if (d->slow[i].rank == rank)
            f = d->slow[i].factor;
    double sigma = d->cfg.jitter;
    if (sigma > 0) {
        /* a lognormal of mean 1, drawn from (seed, rank, batch) alone so
         * the draws do not depend on the order ranks run in */
        uint64_t h = mix(d->seed ^ mix(((uint64_t)(uint32_t)rank << 32) ^
                                       (uint64_t)n ^ 0x64617461ull));
        double u1 = uniform(h), u2 = uniform(mix(h));
        double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        f *= exp(sigma * z - sigma * sigma / 2);
    }
    return f;
}
