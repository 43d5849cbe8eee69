/* sim/rng.c - per-rank random streams (xoshiro256** seeded through
 * splitmix64 from the run seed and the rank), and the compute-jitter
 * distributions. Each rank draws only from its own stream, so results do
 * not depend on the order in which ranks are scheduled. */
#include <math.h>

#include "sim/sim.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sim_rng_seed(sim_rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ sim_hash64(stream + 0x5bd1e995ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(sim_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sim_rng_uniform(sim_rng_t *r)
{
    return ((double)(sim_rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

double sim_rng_normal(sim_rng_t *r)
{
    /* Box-Muller; one draw per call keeps the stream position simple. */
    double u1 = sim_rng_uniform(r), u2 = sim_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double sim_rng_jitter(sim_rng_t *r, herd_jitter_t kind, double sigma)
{
    if (sigma <= 0)
        return 1.0;
    switch (kind) {
    case HERD_JITTER_NORMAL: {
        double f = 1.0 + sigma * sim_rng_normal(r);
        return f > 0 ? f : 0;
    }
    case HERD_JITTER_LOGNORMAL:
        return exp(-sigma * sigma / 2 + sigma * sim_rng_normal(r));
    default:
        return 1.0;
    }
}
