/* cli/cli_workload.c - the run-command plumbing the workload commands
 * (herd ddp run, herd fsdp run, herd parallel run) share: options,
 * outputs, option errors, the simulator's settings (cli_workload.h). */
#include "cli/cli_workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_wl_parse_args(const char *cmd, const char *gpu_mem_key, unsigned flags,
                      int argc, char **argv, cli_wl_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--quiet"))
            a->quiet = 1;
        else if (s[0] == '-' && i + 1 >= argc)
            return cli_usage_error(cmd, "option '%s' needs a value", s);
        else if (!strcmp(s, "--set") && a->nsets < CLI_WL_MAX_SETS)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--set") && (flags & CLI_WL_SET_LIMIT))
            return cli_usage_error(cmd, "at most 64 --set options");
        else if (gpu_mem_key && !strcmp(s, "--gpu-mem")) {
            char *end;
            const char *v = argv[++i];
            double g = strtod(v, &end);
            if (end == v || *end || !(g > 0))
                return cli_usage_error(cmd, "--gpu-mem '%s': expected GiB > 0",
                                       v);
            snprintf(a->gpu_mem, sizeof(a->gpu_mem), "%s=%s", gpu_mem_key, v);
        } else if (!strcmp(s, "--json"))
            a->json = argv[++i];
        else if (!strcmp(s, "--timeline"))
            a->timeline = argv[++i];
        else if (!strcmp(s, "--trace"))
            a->trace = argv[++i];
        else if (!strcmp(s, "--plots"))
            a->plots = argv[++i];
        else if (s[0] == '-')
            return cli_usage_error(cmd, "unknown option '%s'", s);
        else if (!a->scenario)
            a->scenario = s;
        else
            return cli_usage_error(cmd, "unexpected '%s'", s);
    }
    if (a->gpu_mem[0])
        a->sets[a->nsets++] = a->gpu_mem;
    return 0;
}

int cli_wl_write_json(const char *cmd, json_t *j, const char *path)
{
    int bad = !j || json_dump_file(j, path, JSON_INDENT(1));
    json_decref(j);
    if (bad)
        return cli_usage_error(cmd, "cannot write %s", path);
    return 0;
}

int cli_wl_write_timeline(const char *cmd, trace_timeline_t *tl,
                          const char *path)
{
    char err[1024];
    size_t n = strlen(path);
    trace_timeline_sort(tl);
    herd_status_t st =
        n > 4 && !strcmp(path + n - 4, ".tsv")
            ? trace_timeline_write_tsv(tl, path, err, sizeof(err))
            : trace_timeline_write_chrome(tl, path, err, sizeof(err));
    if (st != HERD_OK)
        return cli_usage_error(cmd, "%s", err);
    return 0;
}

int cli_wl_write_trace(const char *cmd, herd_status_t st, trace_t *t,
                       const char *path)
{
    char err[1024];
    if (st == HERD_OK)
        st = trace_write_json(t, path, err, sizeof(err));
    else
        snprintf(err, sizeof(err), "%s", herd_status_string(st));
    trace_destroy(t);
    if (st != HERD_OK)
        return cli_usage_error(cmd, "--trace %s: %s", path, err);
    return 0;
}

void cli_wl_option_error(const char *cmd, const trace_scenario_t *sc,
                         const trace_kv_t *kv, const char *why)
{
    if (kv->line > 0)
        fprintf(stderr, "herd %s: %s:%d:%d: %s\n", cmd, sc->path, kv->line,
                kv->column, why);
    else
        fprintf(stderr, "herd %s: --set %s\n", cmd, why);
}

void cli_wl_warn_no_compute(const char *cmd, const ddp_model_t *m, int *warned)
{
    if (!ddp_model_has_compute(m) && !(*warned)++)
        fprintf(stderr,
                "herd %s: WARNING: model '%s' has no compute: step times are "
                "communication alone (docs/ddp.md, model files)\n",
                cmd, m->name ? m->name : "?");
}

void cli_wl_comm_settings(const trace_scenario_t *sc,
                          herd_algo_t algo[HERD_COLL_COUNT], int *channels,
                          size_t *chunk_bytes)
{
    for (int c = 0; c < HERD_COLL_COUNT; c++)
        algo[c] = sc->algo[c];
    *channels = sc->channels;
    *chunk_bytes = sc->chunk_bytes;
}

herd_init_t cli_wl_sim_init(const trace_scenario_t *sc, int world,
                            herd_timeline_cb cb, void *arg)
{
    herd_init_t init = {.backend = "sim",
                        .world_size = world,
                        .timeout_s = sc->timeout_s,
                        .engine_opts = &sc->sim,
                        .timeline_cb = cb,
                        .timeline_arg = arg};
    return init;
}
