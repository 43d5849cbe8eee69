/* tests/unit_cli_plots.c - what the plots show, read from their SVG: the
 * Gantt chart draws communication only in colours its legend names (one
 * entry per label), the busbw plot labels the largest size, titles name
 * the scenario (or trace), not the path typed, and a Gantt chart of more
 * ranks than it draws says which it shows and how to choose them
 * (--gantt-ranks); the workload plots (sweep of a named knob, memory,
 * a step's streams) draw what their data says. Skipped without
 * gnuplot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

static char *dir;

static int herd(const char *args, char **out)
{
    char cmd[4096];
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", dir,
                     tu_herd_binary(), args);
    ck_assert(n > 0 && (size_t)n < sizeof(cmd));
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

/* herd ARGS with the scenario `rel` (a path under the source tree). */
static void herd_ok(const char *fmt, const char *rel)
{
    char args[3072], src[1024], *out = NULL;
    snprintf(args, sizeof(args), fmt, tu_src_path(src, sizeof(src), rel));
    int rc = herd(args, &out);
    ck_assert_msg(rc == 0, "herd %s: exit %d\n%s", args, rc, out);
    free(out);
}

static char *svg(const char *rel)
{
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    char *s = tu_read_file(path);
    ck_assert_msg(s != NULL, "no %s", path);
    return s;
}

/* The gnuplot SVG title of the plot (the first <text> of the title). */
static void assert_title(const char *s, const char *want)
{
    ck_assert_msg(strstr(s, want), "title '%s' not in the SVG", want);
}

/* The fill colours "rgb(r, g, b)" of the polygons in [from, to). */
static int fills(const char *from, const char *to, char set[][24], int n,
                 int max)
{
    for (const char *p = from; (p = strstr(p, "fill = 'rgb(")) && p < to; p++) {
        char c[24];
        if (sscanf(p, "fill = 'rgb(%23[^)])", c) != 1)
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = !strcmp(set[k], c);
        if (!seen && n < max)
            snprintf(set[n++], sizeof(set[0]), "%s", c);
    }
    return n;
}

static void setup(void)
{
    dir = tu_tmpdir();
}

static void teardown(void)
{
    tu_tmpdir_free(dir);
}

/* Every colour of the chart (plot 1: the boxes) is a legend entry's
 * (the later plots), and each bucket has its entry. */
START_TEST(test_gantt_colours_match_legend)
{
    herd_ok("sim '%s' -o s", "scenarios/straggler.yaml");
    char *s = svg("s/gantt.svg");
    const char *chart = strstr(s, "<g id=\"gnuplot_plot_1\"");
    const char *legend = strstr(s, "<g id=\"gnuplot_plot_2\"");
    ck_assert_ptr_nonnull(chart);
    ck_assert_ptr_nonnull(legend);
    char drawn[16][24], named[16][24];
    int nd = fills(chart, legend, drawn, 0, 16);
    int nn = fills(legend, s + strlen(s), named, 0, 16);
    ck_assert_int_ge(nd, 4); /* compute, wait, three buckets */
    for (int i = 0; i < nd; i++) {
        int found = 0;
        for (int k = 0; k < nn && !found; k++)
            found = !strcmp(drawn[i], named[k]);
        ck_assert_msg(found, "colour rgb(%s) is drawn but not in the legend",
                      drawn[i]);
    }
    const char *entries[] = {"<title>compute</title>", "<title>bucket0</title>",
                             "<title>bucket1</title>", "<title>bucket2</title>",
                             "<title>wait</title>"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(strstr(legend, entries[i]), "no legend entry %s",
                      entries[i]);
    assert_title(s, "<text>straggler: 16 ranks (sim)</text>");
    free(s);
}
END_TEST

/* 64 KiB x 8^k up to 256 MiB: the last size used to lose its tick. */
START_TEST(test_busbw_last_tick)
{
    herd_ok("sim '%s' -o b --set workload.sweep.min=64KiB --set "
            "workload.sweep.max=256MiB --set workload.sweep.factor=8",
            "scenarios/h100-8gpu.yaml");
    char *s = svg("b/busbw.svg");
    const char *ticks[] = {"64KiB", "512KiB", "4MiB", "32MiB", "256MiB"};
    for (int i = 0; i < 5; i++) {
        char t[64];
        snprintf(t, sizeof(t), "<text>%s</text>", ticks[i]);
        ck_assert_msg(strstr(s, t), "no tick %s", ticks[i]);
    }
    assert_title(s, "(h100-8gpu)</text>");
    free(s);
}
END_TEST

/* Titles name the scenario or trace, never the path typed. */
START_TEST(test_titles_name_the_run)
{
    herd_ok("replay '%s' -o r", "scenarios/traces/dp-steps.json");
    char *s = svg("r/gantt.svg");
    assert_title(s, "<text>dp-steps: 16 ranks (replay on sim)</text>");
    free(s);
    herd_ok("sim '%s' -o s", "scenarios/straggler.yaml");
    char *out = NULL;
    ck_assert_int_eq(herd("compare s/timeline.json r/timeline.json -o c", &out),
                     0);
    free(out);
    s = svg("c/compare.svg");
    assert_title(s, "<text>straggler: predicted vs measured</text>");
    free(s);
    herd_ok("sweep '%s' --set ddp.bucket_cap_mb=5,25 --jobs 1 --out w",
            "scenarios/ddp-gpt2-4n.yaml");
    s = svg("w/sweep.svg");
    assert_title(s, "<text>ddp-gpt2-4n: predicted step time vs "
                    "ddp.bucket_cap_mb</text>");
    free(s);
}
END_TEST

/* 64 ranks: 32 rows by default and the title says so and how to choose;
 * --gantt-ranks picks the rows (labelled with their ranks). */
START_TEST(test_gantt_ranks)
{
    herd_ok("sim '%s' -o d --set cluster.nodes=8", "scenarios/straggler.yaml");
    char *s = svg("d/gantt.svg");
    assert_title(s, "ranks 0-31 of 64 shown (--gantt-ranks LIST chooses)");
    ck_assert_msg(strstr(s, "<text>31</text>") && !strstr(s, "<text>32</text>"),
                  "rows 0-31 expected");
    free(s);
    herd_ok("sim '%s' -o g --set cluster.nodes=8 --gantt-ranks 0-3,60-63",
            "scenarios/straggler.yaml");
    s = svg("g/gantt.svg");
    assert_title(s, "ranks 0-3,60-63 of 64 shown</text>");
    ck_assert_msg(strstr(s, "<text>60</text>") && !strstr(s, "<text>4</text>"),
                  "rows 0-3 and 60-63 expected");
    free(s);
    char *out = NULL, args[2048], src[1024];
    snprintf(args, sizeof(args), "sim '%s' -o e --gantt-ranks 0-16",
             tu_src_path(src, sizeof(src), "scenarios/straggler.yaml"));
    ck_assert_int_eq(herd(args, &out), 2);
    ck_assert_msg(strstr(out, "--gantt-ranks '0-16': expected ranks or "
                              "ranges A-B in [0, 15]"),
                  "%s", out);
    free(out);
}
END_TEST

/* The workload plots as gnuplot draws them: a named knob's values as
 * ticks and the best named; the memory bars' parts and the step's
 * streams in the legends (trace_plot_workloads checks their data). */
START_TEST(test_workload_plots_drawn)
{
    herd_ok("sweep '%s' --set fsdp.backward_prefetch=BACKWARD_PRE,none "
            "--set fsdp.steps=2 --jobs 1 --out f",
            "scenarios/fsdp-gpt2-8n.yaml");
    char *s = svg("f/sweep.svg");
    const char *want[] = {"<text>BACKWARD_PRE</text>", "<text>none</text>",
                          "<text>best: BACKWARD_PRE</text>",
                          "<text>within 2% of the best (ties)</text>"};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(strstr(s, want[i]), "no %s", want[i]);
    free(s);
    s = svg("f/memory.svg");
    ck_assert_msg(strstr(s, "<title>unsharded units (params + grads)</title>"),
                  "no unsharded part");
    ck_assert_msg(strstr(s, "<title>optimizer state</title>"), "no optimizer");
    free(s);
    herd_ok("sim '%s' -o t --set fsdp.steps=2 --set cluster.nodes=1",
            "scenarios/fsdp-gpt2-8n.yaml");
    s = svg("t/step.svg");
    const char *rows[] = {"<title>compute</title>", "<title>all_gather</title>",
                          "<title>reduce_scatter</title>",
                          "exposed communication (compute idle)</title>",
                          "<text>rank 7 reduce_scatter</text>"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(strstr(s, rows[i]), "no %s", rows[i]);
    assert_title(s, "<text>ranks 0,1,4,7 of 8 shown (--gantt-ranks LIST "
                    "chooses)</text>");
    free(s);
}
END_TEST

int main(void)
{
    if (tu_run("command -v gnuplot >/dev/null", NULL) != 0) {
        printf("gnuplot not found: skipped\n");
        return 77;
    }
    Suite *s = suite_create("cli_plots");
    TCase *tc = tcase_create("plots");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_gantt_colours_match_legend);
    tcase_add_test(tc, test_busbw_last_tick);
    tcase_add_test(tc, test_titles_name_the_run);
    tcase_add_test(tc, test_gantt_ranks);
    tcase_add_test(tc, test_workload_plots_drawn);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
