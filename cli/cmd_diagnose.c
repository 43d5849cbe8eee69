/* cli/cmd_diagnose.c - `herd diagnose DIR`: read the flight-record dumps
 * of all ranks (DIR/rank<r>.json, written by the tcp engine) and name what
 * went wrong, in the simulator's classification (as PyTorch's flight
 * recorder analyser does): missing rank (no dump, or a rank that never
 * joined a collective the others did), collective mismatch, size mismatch,
 * dtype mismatch, state mismatch (some ranks completed a collective that
 * failed or timed out on others). For each group it walks the sequence numbers
 * all dumps still hold and reports the first one where ranks disagree. Exit: 0
 * nothing found, 1 a problem found, 2 bad usage or input.
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
    "  written on timeout, on peer failure, on SIGUSR1 or by\n"
    "  herd_flight_dump(); set HERD_FLIGHT_DIR=DIR for the run) or\n"
    "  PyTorch's Flight Recorder dumps in JSON (_dump_fr_trace_json,\n"
    "  _dump_nccl_trace_json, TORCH_FR_DUMP_TEMP_FILE files; the rank is\n"
    "  the number that ends the file name). Names missing ranks and\n"
    "  collective / size / dtype / state mismatches per group.\n"
    "  Exit 0: no problem found; 1: a problem found; 2: bad input.\n";

#define DG_MAX_RANKS 65536

typedef struct dg {
    const char *dir;
    int world;
    json_t **dump; /* per world rank, NULL when absent */
    int ndumps;
    int problems;
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
                "world_size and an entries array)\n",
                path);
        json_decref(root);
        return -1;
    }
    int rank = (int)json_integer_value(r);
    if ((int)json_integer_value(w) > d->world) {
        json_t **n =
            realloc(d->dump, (size_t)json_integer_value(w) * sizeof(json_t *));
        if (!n)
            return json_decref(root), -1;
        for (int i = d->world; i < (int)json_integer_value(w); i++)
            n[i] = NULL;
        d->dump = n;
        d->world = (int)json_integer_value(w);
    }
    json_decref(d->dump[rank]);
    d->dump[rank] = root;
    d->ndumps++;
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
        json_t *gs = d->dump[r] ? json_object_get(d->dump[r], "groups") : NULL;
        size_t i;
        json_t *g;
        json_array_foreach(gs, i, g)
        {
            if (json_integer_value(json_object_get(g, "id")) == gid)
                return json_object_get(g, "ranks");
        }
    }
    return NULL;
}

static int is_coll_entry(json_t *e, int gid)
{
    const char *k = json_string_value(json_object_get(e, "coll"));
    return json_integer_value(json_object_get(e, "group")) == gid && k &&
           strcmp(k, "send") != 0 && strcmp(k, "recv") != 0;
}

/* Entry of `rank` for (gid, seq), or NULL; also the rank's seq window. */
static json_t *find_entry(const dg_t *d, int rank, int gid, json_int_t seq,
                          json_int_t *lo, json_int_t *hi)
{
    json_t *es = json_object_get(d->dump[rank], "entries"), *e, *hit = NULL;
    size_t i;
    *lo = -1;
    *hi = 0;
    json_array_foreach(es, i, e)
    {
        if (!is_coll_entry(e, gid))
            continue;
        json_int_t s = json_integer_value(json_object_get(e, "seq"));
        if (*lo < 0 || s < *lo)
            *lo = s;
        if (s > *hi)
            *hi = s;
        if (s == seq)
            hit = e;
    }
    return hit;
}

static const char *str(json_t *e, const char *k)
{
    const char *s = json_string_value(json_object_get(e, k));
    return s ? s : "?";
}

static void describe(json_t *e, json_int_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s (seq %lld, count %lld %s, state %s)", str(e, "coll"),
             (long long)seq,
             (long long)json_integer_value(json_object_get(e, "count")),
             str(e, "dtype"), str(e, "state"));
}

/* Which field two entries of one (group, seq) disagree on, or NULL. */
static const char *mismatch(json_t *a, json_t *b)
{
    if (strcmp(str(a, "coll"), str(b, "coll")))
        return "collective mismatch";
    if (json_integer_value(json_object_get(a, "count")) !=
        json_integer_value(json_object_get(b, "count")))
        return "size mismatch";
    if (strcmp(str(a, "dtype"), str(b, "dtype")))
        return "dtype mismatch";
    if (strcmp(str(a, "op"), str(b, "op")) ||
        json_integer_value(json_object_get(a, "root")) !=
            json_integer_value(json_object_get(b, "root")))
        return "collective mismatch";
    return NULL;
}

/* Rank r has no entry for seq (and none later): name it, describing the
 * op from a rank that joined. 1 when reported. */
static int report_missing(const dg_t *d, int gid, json_t *members,
                          json_int_t seq, int r, json_int_t last)
{
    json_t *ref = NULL;
    json_int_t lo, hi;
    char desc[256];
    for (size_t j = 0; !ref && j < json_array_size(members); j++) {
        int q = (int)json_integer_value(json_array_get(members, j));
        if (q >= 0 && q < d->world && d->dump[q])
            ref = find_entry(d, q, gid, seq, &lo, &hi);
    }
    if (!ref)
        return 0;
    describe(ref, seq, desc, sizeof(desc));
    printf("group %d: class: missing rank\n  rank %d did not join %s; its "
           "last collective on this group is seq %lld\n",
           gid, r, desc, (long long)last);
    return 1;
}

/* Check one sequence number of a group; 1 when a problem was reported. */
static int check_seq(dg_t *d, int gid, json_t *members, json_int_t seq)
{
    size_t n = json_array_size(members), i;
    json_t *first = NULL;
    int first_rank = -1, completed = 0, joined = 0, failed = 0;
    char line[512], desc[256];
    for (i = 0; i < n; i++) {
        int r = (int)json_integer_value(json_array_get(members, i));
        json_int_t lo, hi;
        if (r < 0 || r >= d->world || !d->dump[r])
            continue;
        json_t *e = find_entry(d, r, gid, seq, &lo, &hi);
        if (!e && hi >= seq)
            continue; /* a gap in this rank's ring, not a missing rank */
        if (!e)
            return report_missing(d, gid, members, seq, r, hi);
        joined++;
        completed += !strcmp(str(e, "state"), "completed");
        failed += strcmp(str(e, "status"), "HERD_OK") != 0;
        if (!first) {
            first = e;
            first_rank = r;
            continue;
        }
        const char *cls = mismatch(first, e);
        if (cls) {
            describe(first, seq, desc, sizeof(desc));
            snprintf(line, sizeof(line), "%s", desc);
            describe(e, seq, desc, sizeof(desc));
            printf("group %d: class: %s\n  rank %d: %s\n  rank %d: %s\n", gid,
                   cls, first_rank, line, r, desc);
            return 1;
        }
    }
    /* Dumps are taken at different moments, so an op still running on
     * some ranks is normal; one that completed on some and failed on
     * others is not. */
    if (completed > 0 && failed > 0) {
        describe(first, seq, desc, sizeof(desc));
        printf("group %d: class: state mismatch\n  %s completed on %d of %d "
               "ranks that joined it and failed on %d\n",
               gid, desc, completed, joined, failed);
        return 1;
    }
    return 0;
}

/* Every member joined the group's last collective with the same arguments
 * and none completed it: it is stuck in the transport (a network or
 * device hang), PyTorch's "stuck collective". Only for PyTorch's dumps:
 * herd's tcp engine dumps on its own timeout and names the cause there. */
static int check_stuck(const dg_t *d, int gid, json_t *members, json_int_t seq)
{
    size_t n = json_array_size(members);
    json_t *e = NULL;
    for (size_t i = 0; i < n; i++) {
        int r = (int)json_integer_value(json_array_get(members, i));
        json_int_t lo, hi;
        if (r < 0 || r >= d->world || !d->dump[r] ||
            !json_object_get(d->dump[r], "source"))
            return 0;
        e = find_entry(d, r, gid, seq, &lo, &hi);
        if (!e || !strcmp(str(e, "state"), "completed"))
            return 0;
    }
    char desc[256];
    describe(e, seq, desc, sizeof(desc));
    printf("group %d: class: stuck collective\n  all %zu ranks joined %s and "
           "none completed it when the dumps were taken\n",
           gid, n, desc);
    return 1;
}

static void check_group(dg_t *d, int gid)
{
    json_t *members = group_ranks(d, gid);
    json_int_t lo_all = 0, hi_all = 0;
    size_t n = json_array_size(members);
    for (size_t i = 0; i < n; i++) {
        int r = (int)json_integer_value(json_array_get(members, i));
        json_int_t lo, hi;
        if (r < 0 || r >= d->world || !d->dump[r])
            continue;
        find_entry(d, r, gid, -1, &lo, &hi);
        if (lo > lo_all)
            lo_all = lo; /* older entries may have left some rings */
        if (hi > hi_all)
            hi_all = hi;
    }
    for (json_int_t s = lo_all > 0 ? lo_all : 1; s <= hi_all; s++)
        if (check_seq(d, gid, members, s)) {
            d->problems++;
            return;
        }
    if (hi_all > 0 && check_stuck(d, gid, members, hi_all))
        d->problems++;
}

static void check_all(dg_t *d)
{
    char miss[512] = "";
    size_t len = 0;
    for (int r = 0; r < d->world; r++)
        if (!d->dump[r] && len + 16 < sizeof(miss))
            len += (size_t)snprintf(miss + len, sizeof(miss) - len, "%s%d",
                                    len ? ", " : "", r);
    if (len) {
        printf("class: missing rank\n  no dump from rank(s) %s (dead, hung "
               "outside herd, or never started)\n",
               miss);
        d->problems++;
    }
    int seen[256], nseen = 0;
    for (int r = 0; r < d->world; r++) {
        json_t *gs = d->dump[r] ? json_object_get(d->dump[r], "groups") : NULL;
        size_t i;
        json_t *g;
        json_array_foreach(gs, i, g)
        {
            int id = (int)json_integer_value(json_object_get(g, "id")), k;
            for (k = 0; k < nseen && seen[k] != id; k++)
                ;
            if (k < nseen || nseen == 256)
                continue;
            seen[nseen++] = id;
            check_group(d, id);
        }
    }
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
        check_all(&d);
        if (!d.problems)
            printf("no problem found: the ranks agree on every collective "
                   "their records hold\n");
    }
    for (int r = 0; r < d.world; r++)
        json_decref(d.dump[r]);
    free(d.dump);
    return rc ? 2 : d.problems ? 1 : 0;
}
