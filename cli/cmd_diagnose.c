/* cli/cmd_diagnose.c - `herd diagnose DIR`: read the flight-record dumps
 * of all ranks (DIR/rank<r>.json, written by any engine: tcp, mpi, nccl,
 * or the simulator for a run that hung) and name what went wrong, in the
 * simulator's classification (as PyTorch's flight recorder analyser
 * does): missing rank (no dump, or a rank that never joined a collective
 * the others did, or died in it), collective mismatch, size mismatch,
 * dtype mismatch, state mismatch (some ranks completed a collective that
 * failed or timed out on others), stuck collective (every member joined
 * the group's last collective and none completed it). For each group it
 * walks the sequence numbers all dumps still hold and reports the first
 * one where ranks disagree, with the waiting, missing and mismatched
 * ranks listed as the simulator's report lists them. Exit: 0 nothing
 * found, 1 a problem found, 2 bad usage or input.
 *
 * PyTorch's Flight Recorder dumps (JSON) are read too: trace/frdump.c turns
 * each into herd's form, so the same rules classify a torch job's hang. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/escape.h"
#include "trace/frdump.h"

static const char usage[] =
    "usage: herd diagnose DIR | FILE...\n"
    "  Analyse the flight-record dumps of a run: herd's (DIR/rank<r>.json,\n"
    "  from any engine: written on timeout, on peer failure, on SIGUSR1\n"
    "  (tcp) or by herd_flight_dump(); set HERD_FLIGHT_DIR=DIR for the run;\n"
    "  `herd sim --flight-dir DIR` writes the simulator's at a hang) or\n"
    "  PyTorch's Flight Recorder dumps in JSON (_dump_fr_trace_json,\n"
    "  _dump_nccl_trace_json, TORCH_FR_DUMP_TEMP_FILE files; the rank is\n"
    "  the number that ends the file name). Names missing ranks,\n"
    "  collective / size / dtype / state mismatches and stuck collectives\n"
    "  per group, with the waiting, missing and mismatched ranks.\n"
    "  Exit 0: no problem found; 1: a problem found; 2: bad input.\n";

#define DG_MAX_RANKS 65536
#define DG_MAX_LINES 8 /* per-rank lines of one problem; then a count */
/* Groups looked at per dump and in all: a hostile dump with a group per
 * entry must not make the analysis quadratic in its size. */
#define DG_MAX_GROUPS 4096

/* One rank's collectives on one group, sorted by sequence number. */
typedef struct dg_seq {
    json_int_t seq;
    json_t *e;
} dg_seq_t;

typedef struct dg_idx {
    int gid;
    dg_seq_t *v;
    size_t n, cap;
} dg_idx_t;

typedef struct dg_rank {
    json_t *dump; /* NULL when absent */
    dg_idx_t *idx;
    size_t nidx;
    int dead; /* the dump says the rank died (simulator) */
} dg_rank_t;

typedef struct dg {
    const char *dir;
    int world;
    dg_rank_t *rk; /* per world rank */
    int ndumps;
    int problems;
    int *wait, *miss, *bad; /* scratch rank lists, `world` each */
} dg_t;

/* PyTorch writes its dump files pickled unless asked for JSON. */
static int is_pickle(const char *path)
{
    FILE *f = fopen(path, "rb");
    int c = f ? fgetc(f) : EOF;
    if (f)
        fclose(f);
    return c == 0x80;
}

/* A PyTorch dump becomes herd's form (its rank from the file name). */
static json_t *from_pytorch(json_t *root, const char *path)
{
    char err[512];
    json_t *conv = NULL;
    int rank = trace_frdump_rank_from_name(path);
    if (rank < 0) {
        fprintf(stderr,
                "herd diagnose: %s: a PyTorch flight-recorder dump "
                "names no rank: end its file name with the rank "
                "(rank<r>.json)\n",
                path);
    } else if (trace_frdump_convert(root, rank, 0, path, &conv, err,
                                    sizeof(err)) != HERD_OK) {
        core_escape_msg(err, sizeof(err)); /* file names from the folder */
        fprintf(stderr, "herd diagnose: %s\n", err);
        conv = NULL;
    }
    json_decref(root);
    return conv;
}

static const char *str(json_t *e, const char *k)
{
    const char *s = json_string_value(json_object_get(e, k));
    return s ? s : "?";
}

static json_int_t num(json_t *e, const char *k)
{
    return json_integer_value(json_object_get(e, k));
}

static int is_coll_entry(json_t *e)
{
    const char *k = json_string_value(json_object_get(e, "coll"));
    return json_is_integer(json_object_get(e, "seq")) && k &&
           strcmp(k, "send") != 0 && strcmp(k, "recv") != 0;
}

static int by_seq(const void *a, const void *b)
{
    json_int_t x = ((const dg_seq_t *)a)->seq, y = ((const dg_seq_t *)b)->seq;
    return x < y ? -1 : x > y;
}

static dg_idx_t *idx_of(const dg_rank_t *r, int gid)
{
    for (size_t i = 0; i < r->nidx; i++)
        if (r->idx[i].gid == gid)
            return &r->idx[i];
    return NULL;
}

static void rank_free(dg_rank_t *r)
{
    for (size_t i = 0; i < r->nidx; i++)
        free(r->idx[i].v);
    free(r->idx);
    json_decref(r->dump);
    memset(r, 0, sizeof(*r));
}

/* The dump's collectives per group, sorted by sequence number (a later
 * entry with the same number replaces an earlier one), so a lookup is a
 * binary search however many ranks and entries there are. */
static int rank_index(dg_rank_t *r)
{
    json_t *es = json_object_get(r->dump, "entries"), *e;
    size_t i;
    json_array_foreach(es, i, e)
    {
        if (!is_coll_entry(e))
            continue;
        int gid = (int)num(e, "group");
        dg_idx_t *x = idx_of(r, gid);
        if (!x && r->nidx == DG_MAX_GROUPS)
            continue; /* beyond the limit: not analysed */
        if (!x) {
            dg_idx_t *v = realloc(r->idx, (r->nidx + 1) * sizeof(*v));
            if (!v)
                return -1;
            r->idx = v;
            x = &v[r->nidx++];
            memset(x, 0, sizeof(*x));
            x->gid = gid;
        }
        if (x->n == x->cap) {
            size_t cap = x->cap ? x->cap * 2 : 64;
            dg_seq_t *v = realloc(x->v, cap * sizeof(*v));
            if (!v)
                return -1;
            x->v = v;
            x->cap = cap;
        }
        x->v[x->n++] = (dg_seq_t){num(e, "seq"), e};
    }
    for (i = 0; i < r->nidx; i++) {
        dg_idx_t *x = &r->idx[i];
        size_t k = 0;
        qsort(x->v, x->n, sizeof(*x->v), by_seq);
        for (size_t j = 0; j < x->n; j++) {
            if (k && x->v[k - 1].seq == x->v[j].seq &&
                num(x->v[k - 1].e, "id") > num(x->v[j].e, "id"))
                continue; /* keep the later record of a repeated seq */
            if (k && x->v[k - 1].seq == x->v[j].seq)
                k--;
            x->v[k++] = x->v[j];
        }
        x->n = k;
    }
    return 0;
}

static int load_one(dg_t *d, const char *path)
{
    json_error_t err;
    if (is_pickle(path))
        return fprintf(stderr,
                       "herd diagnose: %s: a pickled dump; herd "
                       "reads the JSON form: python3 -c 'import pickle, json, "
                       "sys; json.dump(pickle.load(open(sys.argv[1], \"rb\")), "
                       "open(sys.argv[2], \"w\"), default=str)' %s %s.json\n",
                       path, path, path),
               -1;
    json_t *root = json_load_file(path, 0, &err);
    char text[400];
    if (!root) /* jansson quotes the bad bytes: escape them */
        return fprintf(stderr, "herd diagnose: %s:%d:%d: %s\n", path, err.line,
                       err.column, core_escape(err.text, text, sizeof(text))),
               -1;
    if (trace_frdump_is_pytorch(root) && !(root = from_pytorch(root, path)))
        return -1;
    json_t *r = json_object_get(root, "rank");
    json_t *w = json_object_get(root, "world_size");
    if (!json_is_integer(r) || !json_is_integer(w) ||
        !json_is_array(json_object_get(root, "entries")) ||
        json_integer_value(r) < 0 ||
        json_integer_value(r) >= json_integer_value(w) ||
        json_integer_value(w) > DG_MAX_RANKS) {
        fprintf(stderr,
                "herd diagnose: %s: not a flight-record dump (needs rank < "
                "world_size <= %d and an entries array)\n",
                path, DG_MAX_RANKS);
        json_decref(root);
        return -1;
    }
    int rank = (int)json_integer_value(r), world = (int)json_integer_value(w);
    if (world > d->world) {
        dg_rank_t *n = realloc(d->rk, (size_t)world * sizeof(*n));
        if (n)
            d->rk = n;
        int **lists[] = {&d->wait, &d->miss, &d->bad}, ok = n != NULL;
        for (int i = 0; i < 3; i++) {
            int *l = realloc(*lists[i], (size_t)world * sizeof(int));
            if (l)
                *lists[i] = l;
            ok &= l != NULL;
        }
        if (!ok)
            return json_decref(root), -1;
        memset(n + d->world, 0, (size_t)(world - d->world) * sizeof(*n));
        d->world = world;
    }
    dg_rank_t *rk = &d->rk[rank];
    d->ndumps += rk->dump == NULL;
    rank_free(rk);
    rk->dump = root;
    rk->dead = !strcmp(str(root, "rank_state"), "dead");
    if (rank_index(rk) != 0)
        return fprintf(stderr, "herd diagnose: out of memory\n"), -1;
    return 0;
}

static int load_dir(dg_t *d)
{
    DIR *dir = opendir(d->dir);
    if (!dir)
        return fprintf(stderr, "herd diagnose: cannot open directory '%s'\n",
                       d->dir),
               -1;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dir)) && rc == 0) {
        if (de->d_name[0] == '.' || trace_frdump_rank_from_name(de->d_name) < 0)
            continue; /* rank<r>.json, or a name ending in its rank */
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", d->dir, de->d_name);
        rc = load_one(d, path);
    }
    closedir(dir);
    if (rc == 0 && d->ndumps == 0)
        return fprintf(stderr, "herd diagnose: no rank<r>.json dumps in '%s'\n",
                       d->dir),
               -1;
    return rc;
}

/* The group's member list, from the first dump that knows it. */
static json_t *group_ranks(const dg_t *d, int gid)
{
    for (int r = 0; r < d->world; r++) {
        json_t *gs = json_object_get(d->rk[r].dump, "groups");
        size_t i;
        json_t *g;
        json_array_foreach(gs, i, g)
        {
            if (num(g, "id") == gid)
                return json_object_get(g, "ranks");
        }
    }
    return NULL;
}

/* The group's member i as a world rank with a dump, or -1. */
static int member(const dg_t *d, json_t *members, size_t i)
{
    json_int_t r = json_integer_value(json_array_get(members, i));
    return r >= 0 && r < d->world && d->rk[r].dump ? (int)r : -1;
}

/* Rank r's entry for (gid, seq), or NULL; *last: its highest seq there
 * (0: none). */
static json_t *find_entry(const dg_t *d, int r, int gid, json_int_t seq,
                          json_int_t *last)
{
    const dg_idx_t *x = idx_of(&d->rk[r], gid);
    *last = x && x->n ? x->v[x->n - 1].seq : 0;
    if (!x)
        return NULL;
    dg_seq_t key = {seq, NULL};
    dg_seq_t *hit = bsearch(&key, x->v, x->n, sizeof(*x->v), by_seq);
    return hit ? hit->e : NULL;
}

static void describe(json_t *e, json_int_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s (seq %lld, count %lld %s, state %s)", str(e, "coll"),
             (long long)seq, (long long)num(e, "count"), str(e, "dtype"),
             str(e, "state"));
}

/* Which field two entries of one (group, seq) disagree on, or NULL. */
static const char *mismatch(json_t *a, json_t *b)
{
    if (strcmp(str(a, "coll"), str(b, "coll")))
        return "collective mismatch";
    if (num(a, "count") != num(b, "count"))
        return "size mismatch";
    if (strcmp(str(a, "dtype"), str(b, "dtype")))
        return "dtype mismatch";
    if (strcmp(str(a, "op"), str(b, "op")) || num(a, "root") != num(b, "root"))
        return "collective mismatch";
    return NULL;
}

/* "0-2,4-15" as the simulator's report writes rank lists. */
static void print_ranks(const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        printf("%s%d", i ? "," : "", v[i]);
        if (j > i)
            printf("-%d", v[j]);
        i = j + 1;
    }
    if (n == 0)
        printf("none");
}

/* What the members did at one (group, seq). */
typedef struct dg_at {
    json_t *ref; /* the arguments most members posted */
    int ref_rank;
    int joined, completed, failed;
    int nwait, nmiss, nbad;
    int *wait, *miss, *bad; /* world ranks, ascending within each */
    const char *cls;        /* of the first mismatched rank */
} dg_at_t;

/* The reference entry: the arguments more than half the joined members
 * agree on (Boyer and Moore's majority vote, linear in the members), else
 * the lowest rank's; so the one rank that skipped a collective is the one
 * named, whichever rank posted first. */
static void pick_ref(const dg_t *d, int gid, json_t *members, json_int_t seq,
                     dg_at_t *at)
{
    size_t n = json_array_size(members);
    json_t *cand = NULL, *first = NULL;
    int cand_rank = -1, first_rank = -1, votes = 0, joined = 0, agree = 0;
    json_int_t last;
    for (size_t i = 0; i < n; i++) {
        int r = member(d, members, i);
        json_t *e = r >= 0 ? find_entry(d, r, gid, seq, &last) : NULL;
        if (!e)
            continue;
        if (!first || r < first_rank) {
            first = e;
            first_rank = r;
        }
        if (votes == 0) {
            cand = e;
            cand_rank = r;
        }
        votes += !mismatch(cand, e) ? 1 : -1;
    }
    for (size_t i = 0; cand && i < n; i++) {
        int r = member(d, members, i);
        json_t *e = r >= 0 ? find_entry(d, r, gid, seq, &last) : NULL;
        joined += e != NULL;
        agree += e && !mismatch(cand, e);
    }
    at->ref = agree * 2 > joined ? cand : first;
    at->ref_rank = agree * 2 > joined ? cand_rank : first_rank;
    if (at->ref == cand) /* the lowest rank among those that agree */
        for (size_t i = 0; i < n; i++) {
            int r = member(d, members, i);
            json_t *e = r >= 0 ? find_entry(d, r, gid, seq, &last) : NULL;
            if (e && r < at->ref_rank && !mismatch(cand, e)) {
                at->ref = e;
                at->ref_rank = r;
            }
        }
}

/* Fills `at` for one sequence number; 1 when ranks disagree there (a
 * mismatch, a missing rank, or a state mismatch). */
static int check_seq(dg_t *d, int gid, json_t *members, json_int_t seq,
                     dg_at_t *at)
{
    size_t n = json_array_size(members);
    memset(at, 0, sizeof(*at));
    at->wait = d->wait;
    at->miss = d->miss;
    at->bad = d->bad;
    pick_ref(d, gid, members, seq, at);
    if (!at->ref)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int r = member(d, members, i);
        json_int_t last;
        json_t *e = r >= 0 ? find_entry(d, r, gid, seq, &last) : NULL;
        if (r < 0 || (!e && last >= seq))
            continue; /* no dump, or a gap in this rank's ring */
        int done = e && !strcmp(str(e, "state"), "completed");
        if (!e || (d->rk[r].dead && !done)) {
            if (at->nmiss < d->world)      /* a member list may repeat ranks */
                at->miss[at->nmiss++] = r; /* never came, or died in it */
            continue;
        }
        if (!done && at->nwait < d->world)
            at->wait[at->nwait++] = r;
        const char *cls = mismatch(at->ref, e);
        if (cls && !at->nbad)
            at->cls = cls;
        if (cls && at->nbad < d->world)
            at->bad[at->nbad++] = r;
        at->joined++;
        at->completed += done;
        at->failed += strcmp(str(e, "status"), "HERD_OK") != 0;
    }
    return at->nbad || at->nmiss || (at->completed && at->failed);
}

static void report_lists(const dg_at_t *at)
{
    printf("  waiting ranks (%d): ", at->nwait);
    print_ranks(at->wait, at->nwait);
    printf("\n  missing ranks (%d): ", at->nmiss);
    print_ranks(at->miss, at->nmiss);
    printf("\n");
    if (at->nbad) {
        printf("  mismatched ranks (%d): ", at->nbad);
        print_ranks(at->bad, at->nbad);
        printf(" (their arguments differ from rank %d's)\n", at->ref_rank);
    }
}

static void report(const dg_t *d, int gid, json_int_t seq, const dg_at_t *at)
{
    char desc[256], other[256];
    json_int_t last;
    describe(at->ref, seq, desc, sizeof(desc));
    if (at->nbad) {
        json_t *e = find_entry(d, at->bad[0], gid, seq, &last);
        describe(e, seq, other, sizeof(other));
        printf("group %d: class: %s\n  rank %d: %s\n  rank %d: %s\n", gid,
               at->cls, at->ref_rank, desc, at->bad[0], other);
    } else if (at->nmiss) {
        printf("group %d: class: missing rank\n", gid);
        for (int i = 0; i < at->nmiss && i < DG_MAX_LINES; i++) {
            int r = at->miss[i];
            json_t *e = find_entry(d, r, gid, seq, &last);
            if (e)
                printf("  rank %d died in %s (its record says it is dead)\n", r,
                       desc);
            else
                printf("  rank %d did not join %s; its last collective on "
                       "this group is seq %lld%s\n",
                       r, desc, (long long)last,
                       d->rk[r].dead ? " (its record says it is dead)" : "");
        }
        if (at->nmiss > DG_MAX_LINES)
            printf("  ... and %d more\n", at->nmiss - DG_MAX_LINES);
    } else {
        printf("group %d: class: state mismatch\n  %s completed on %d of %d "
               "ranks that joined it and failed on %d\n",
               gid, desc, at->completed, at->joined, at->failed);
    }
    report_lists(at);
}

/* Every member joined the group's last collective with the same arguments
 * and none completed it: it is stuck in the transport (a network or
 * device hang, or a peer that is slow beyond the timeout), PyTorch's
 * "stuck collective". */
static int check_stuck(dg_t *d, int gid, json_t *members, json_int_t seq)
{
    size_t n = json_array_size(members);
    dg_at_t at;
    for (size_t i = 0; i < n; i++)
        if (member(d, members, i) < 0)
            return 0; /* a dump is missing: named above */
    if (check_seq(d, gid, members, seq, &at) || at.joined < (int)n ||
        at.completed)
        return 0;
    char desc[256];
    describe(at.ref, seq, desc, sizeof(desc));
    printf("group %d: class: stuck collective\n  all %zu ranks joined %s and "
           "none completed it when the dumps were taken\n",
           gid, n, desc);
    report_lists(&at);
    return 1;
}

/* The sequence numbers any member holds, ascending, from the newest
 * first one (older ones may have left some rings) on. */
static json_int_t *group_seqs(const dg_t *d, int gid, json_t *members,
                              size_t *out_n)
{
    size_t n = json_array_size(members), total = 0, k = 0;
    json_int_t lo = 0;
    for (size_t i = 0; i < n; i++) {
        int r = member(d, members, i);
        const dg_idx_t *x = r >= 0 ? idx_of(&d->rk[r], gid) : NULL;
        if (x && x->n) {
            total += x->n;
            if (x->v[0].seq > lo)
                lo = x->v[0].seq;
        }
    }
    dg_seq_t *all = malloc((total ? total : 1) * sizeof(*all));
    json_int_t *seqs = malloc((total ? total : 1) * sizeof(*seqs));
    if (!all || !seqs) {
        free(all);
        free(seqs);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        int r = member(d, members, i);
        const dg_idx_t *x = r >= 0 ? idx_of(&d->rk[r], gid) : NULL;
        for (size_t j = 0; x && j < x->n; j++)
            if (x->v[j].seq >= lo)
                all[k++] = x->v[j];
    }
    qsort(all, k, sizeof(*all), by_seq);
    *out_n = 0;
    for (size_t j = 0; j < k; j++)
        if (!*out_n || seqs[*out_n - 1] != all[j].seq)
            seqs[(*out_n)++] = all[j].seq;
    free(all);
    return seqs;
}

static void check_group(dg_t *d, int gid)
{
    json_t *members = group_ranks(d, gid);
    size_t ns = 0;
    json_int_t *seqs = group_seqs(d, gid, members, &ns);
    dg_at_t at;
    if (!seqs) {
        fprintf(stderr, "herd diagnose: out of memory\n");
        return;
    }
    for (size_t i = 0; i < ns; i++)
        if (check_seq(d, gid, members, seqs[i], &at)) {
            report(d, gid, seqs[i], &at);
            d->problems++;
            free(seqs);
            return;
        }
    if (ns && check_stuck(d, gid, members, seqs[ns - 1]))
        d->problems++;
    free(seqs);
}

/* Where the dumps come from: engines and why they were written. */
static void print_sources(const dg_t *d)
{
    char seen[512] = "";
    size_t len = 0;
    for (int r = 0; r < d->world; r++) {
        json_t *j = d->rk[r].dump;
        if (!j)
            continue;
        char one[160];
        if (json_object_get(j, "source"))
            snprintf(one, sizeof(one), "%s", str(j, "source"));
        else if (json_object_get(j, "reason"))
            snprintf(one, sizeof(one), "%.40s engine, written on %.40s",
                     str(j, "engine"), str(j, "reason"));
        else
            snprintf(one, sizeof(one), "%.40s engine", str(j, "engine"));
        core_escape_msg(one, sizeof(one));
        if (strstr(seen, one) || len + strlen(one) + 3 >= sizeof(seen))
            continue;
        len += (size_t)snprintf(seen + len, sizeof(seen) - len, "%s%s",
                                len ? "; " : "", one);
    }
    printf("dumps: %s\n", seen);
}

static void check_all(dg_t *d)
{
    char miss[512] = "";
    size_t len = 0;
    for (int r = 0; r < d->world; r++)
        if (!d->rk[r].dump && len + 16 < sizeof(miss))
            len += (size_t)snprintf(miss + len, sizeof(miss) - len, "%s%d",
                                    len ? ", " : "", r);
    if (len) {
        printf("class: missing rank\n  no dump from rank(s) %s (dead, hung "
               "outside herd, or never started)\n",
               miss);
        d->problems++;
    }
    int *seen = NULL, nseen = 0;
    for (int r = 0; r < d->world; r++) {
        json_t *gs = json_object_get(d->rk[r].dump, "groups");
        size_t i;
        json_t *g;
        json_array_foreach(gs, i, g)
        {
            int id = (int)num(g, "id"), k;
            for (k = 0; k < nseen && seen[k] != id; k++)
                ;
            if (k < nseen)
                continue;
            if (nseen == DG_MAX_GROUPS) {
                printf("(more than %d groups: the others are not checked)\n",
                       DG_MAX_GROUPS);
                r = d->world; /* and stop looking */
                break;
            }
            int *v = realloc(seen, (size_t)(nseen + 1) * sizeof(int));
            if (!v)
                break;
            seen = v;
            seen[nseen++] = id;
            check_group(d, id);
        }
    }
    free(seen);
}

int cli_diagnose_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    if (argc < 2)
        return cli_usage_error("diagnose", "expected a directory or dump "
                                           "files (see --help)");
    dg_t d = {.dir = argv[1]};
    int rc = 0;
    struct stat sb;
    if (argc == 2 && stat(argv[1], &sb) == 0 && S_ISDIR(sb.st_mode))
        rc = load_dir(&d);
    else {
        d.dir = "the files given";
        for (int i = 1; i < argc && !rc; i++)
            rc = load_one(&d, argv[i]);
    }
    if (rc == 0) {
        printf("herd diagnose: %d dump(s) of a %d-rank world in %s\n", d.ndumps,
               d.world, d.dir);
        print_sources(&d);
        check_all(&d);
        if (!d.problems)
            printf("no problem found: the ranks agree on every collective "
                   "their records hold\n");
    }
    for (int r = 0; r < d.world; r++)
        rank_free(&d.rk[r]);
    free(d.rk);
    free(d.wait);
    free(d.miss);
    free(d.bad);
    return rc ? 2 : d.problems ? 1 : 0;
}
