/* tests/sim_identity.c - the simulator's predictions do not move when its
 * cost does: every shipped scenario (every scenarios/NAME.yaml, all of them 64
 * x 8 GPUs or smaller) and a few variants with other algorithms are run with
 * `herd sim`, and a hash of what they predict (the exit status,
 * timeline.tsv: every record's times to the nanosecond, and sweep.tsv) is
 * compared with the reference in tests/data/sim_identity.tsv, produced by the
 * code before the simulator's speed-ups. A scenario in scenarios/ that the
 * reference does not list fails too, so a new one gets a reference.
 *
 * A change to the simulator must leave every hash alone. A change that
 * moves predictions on purpose (a workload model, a network model fix)
 * regenerates the reference in the same commit and says why. To
 * regenerate (from a build whose predictions are trusted;
 * docs/simulator.md, "Cost and limits"):
 *   HERD_IDENTITY_WRITE=tests/data/sim_identity.tsv build/tests/sim_identity
 * run from the source tree with HERD_SOURCE_DIR and HERD_BINARY set as
 * CTest sets them (or from `ctest -R sim_identity` with the variable set). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

/* Variants beyond the scenarios as shipped: the NCCL model and the other
 * algorithms on the shapes the speed-ups target. name, scenario, --set. */
static const char *const variants[][3] = {
    {"64n-8gpu-400g+nccl", "64n-8gpu-400g.yaml",
     "--set 'workload.sweep.algorithms=[nccl, tree, rhd]'"},
    {"ddp-gpt2-4n+nccl", "ddp-gpt2-4n.yaml",
     "--set collectives.algorithm=nccl"},
    {"ddp-gpt2-4n+tree", "ddp-gpt2-4n.yaml",
     "--set collectives.algorithm=tree"},
    {"ddp-gpt2-4n+ch4", "ddp-gpt2-4n.yaml",
     "--set collectives.channels=4 --set collectives.chunk=1MiB"},
    {"ddp-gpt2-64n+ch2", "ddp-gpt2-64n.yaml",
     "--set collectives.channels=2 --set ddp.steps=1"},
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

typedef struct idcase {
    char name[128], scenario[128], sets[256];
} idcase_t;

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_file(uint64_t h, const char *path)
{
    char *t = tu_read_file(path);
    if (!t)
        return fnv(h, "-", 1);
    h = fnv(h, t, strlen(t));
    free(t);
    return h;
}

/* Runs one case; returns its hash (exit status, outputs). */
static uint64_t run_case(const idcase_t *c, const char *tmp)
{
    char src[1024], dir[1400], args[3000], path[1500];
    tu_src_path(src, sizeof(src), "scenarios");
    snprintf(dir, sizeof(dir), "%s/%s", tmp, c->name);
    snprintf(args, sizeof(args), "sim %s/%s -o %s --no-plots %s", src,
             c->scenario, dir, c->sets);
    int rc = tu_herd(args, NULL);
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, (const char *)&rc, sizeof(rc));
    snprintf(path, sizeof(path), "%s/timeline.tsv", dir);
    h = hash_file(h, path);
    snprintf(path, sizeof(path), "%s/sweep.tsv", dir);
    return hash_file(h, path);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const idcase_t *)a)->name, ((const idcase_t *)b)->name);
}

/* The cases: every scenarios/NAME.yaml, then the variants. */
static idcase_t *cases(size_t *n_out)
{
    char src[1024];
    DIR *d = opendir(tu_src_path(src, sizeof(src), "scenarios"));
    ck_assert_msg(d != NULL, "cannot open %s", src);
    idcase_t *v = calloc(256 + NVARIANTS, sizeof(*v));
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len >= 100 || strcmp(e->d_name + len - 5, ".yaml"))
            continue;
        snprintf(v[n].scenario, sizeof(v[n].scenario), "%.99s", e->d_name);
        snprintf(v[n].name, sizeof(v[n].name), "%.*s", (int)(len - 5),
                 e->d_name);
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof(*v), by_name);
    for (size_t i = 0; i < NVARIANTS; i++, n++) {
        snprintf(v[n].name, sizeof(v[n].name), "%s", variants[i][0]);
        snprintf(v[n].scenario, sizeof(v[n].scenario), "%s", variants[i][1]);
        snprintf(v[n].sets, sizeof(v[n].sets), "%s", variants[i][2]);
    }
    *n_out = n;
    return v;
}

/* The reference's hash of `name`, 0 when it does not list it. */
static uint64_t ref_hash(const char *ref, const char *name)
{
    size_t nl = strlen(name);
    for (const char *l = ref; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
        if (strncmp(l, name, nl) == 0 && l[nl] == '\t')
            return strtoull(l + nl + 1, NULL, 16);
    return 0;
}

START_TEST(test_identity)
{
    size_t n = 0;
    idcase_t *v = cases(&n);
    char *tmp = tu_tmpdir();
    ck_assert_ptr_nonnull(tmp);
    const char *write = getenv("HERD_IDENTITY_WRITE");
    char refpath[1024];
    tu_data_path(refpath, sizeof(refpath), "sim_identity.tsv");
    char *ref = write && *write ? NULL : tu_read_file(refpath);
    ck_assert_msg(ref || (write && *write), "cannot read %s", refpath);
    FILE *f = write && *write ? fopen(write, "w") : NULL;
    if (f)
        fprintf(f, "# tests/sim_identity.c: case, hash of what herd sim "
                   "predicts (see the file's header to regenerate)\n");
    char bad[4096] = "";
    size_t nbad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = run_case(&v[i], tmp);
        if (f) {
            fprintf(f, "%s\t%016llx\n", v[i].name, (unsigned long long)h);
            continue;
        }
        uint64_t want = ref_hash(ref, v[i].name);
        if (want == h)
            continue;
        nbad++;
        size_t len = strlen(bad);
        snprintf(bad + len, sizeof(bad) - len, "\n  %s (%s %s): %s", v[i].name,
                 v[i].scenario, v[i].sets,
                 want ? "predictions differ from the reference"
                      : "not in tests/data/sim_identity.tsv");
    }
    if (f)
        fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    tu_run(cmd, NULL);
    free(tmp);
    free(ref);
    free(v);
    ck_assert_msg(nbad == 0,
                  "%zu case(s) changed:%s\n(a change that moves predictions "
                  "on purpose regenerates tests/data/sim_identity.tsv: see "
                  "tests/sim_identity.c)",
                  nbad, bad);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_identity");
    TCase *tc = tcase_create("scenarios");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, test_identity);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
