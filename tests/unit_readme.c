/* tests/unit_readme.c - the README never lies: every tour block's output
 * (scripts/readme-blocks.py runs its commands with this tree's herd) is
 * what the binary prints now. And the script itself: it finds a stale
 * block, rewrites it, applies the head / grep / drop / skip rules with
 * "..." for what they leave out, runs the commands of one block in one
 * folder, and refuses an unknown rule. Skipped without /usr/bin/python3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <herd/herd.h>

#include "support/testutil.h"

#define PYTHON "/usr/bin/python3"

/* The script on `files` (--check when check); output in *out. */
static int blocks(const char *files, int check, char **out)
{
    char cmd[4096], script[1024];
    int n = snprintf(
        cmd, sizeof(cmd), "%s '%s' --herd '%s' %s %s 2>&1", PYTHON,
        tu_src_path(script, sizeof(script), "scripts/readme-blocks.py"),
        tu_herd_binary(), check ? "--check" : "", files);
    ck_assert(n > 0 && (size_t)n < sizeof(cmd));
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

START_TEST(test_readme_matches_binary)
{
    char readme[1024], files[1100], *out = NULL;
    snprintf(files, sizeof(files), "'%s'",
             tu_src_path(readme, sizeof(readme), "README.md"));
    int rc = blocks(files, 1, &out);
    ck_assert_msg(rc == 0,
                  "README.md and the binary disagree (regenerate with "
                  "/usr/bin/python3 scripts/readme-blocks.py --herd "
                  "BUILD/cli/herd):\n%s",
                  out);
    ck_assert_msg(strstr(out, "0 differ from the binary"), "%s", out);
    free(out);
}
END_TEST

/* A small document: one stale block of each kind. */
static const char doc[] = "# t\n\n"
                          "<!-- readme-block: head 2 -->\n"
                          "```\n"
                          "$ herd --help\n"
                          "stale\n"
                          "```\n\n"
                          "<!-- readme-block: grep ^  (sim|check) -->\n"
                          "```\n"
                          "$ herd \\\n"
                          "    --help\n"
                          "```\n\n"
                          "<!-- readme-block: drop ^  [a-z] -->\n"
                          "```\n"
                          "$ herd --version\n"
                          "$ herd check x.json\n"
                          "```\n\n"
                          "<!-- readme-block: skip (not run) -->\n"
                          "```\n"
                          "$ herd no-such-command\n"
                          "old output\n"
                          "```\n\n"
                          "```sh\n"
                          "make test   # not a tour block\n"
                          "```\n";

START_TEST(test_script_rules)
{
    char *dir = tu_tmpdir(), path[1100], files[1200], *out = NULL;
    snprintf(path, sizeof(path), "%s/doc.md", dir);
    snprintf(files, sizeof(files), "'%s'", path);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(doc, f);
    fclose(f);
    /* check: stale, nothing written */
    ck_assert_int_eq(blocks(files, 1, &out), 1);
    ck_assert_msg(strstr(out, "4 tour blocks, 4 differ from the binary"), "%s",
                  out);
    ck_assert_msg(strstr(out, "-stale"), "%s", out);
    free(out);
    char *text = tu_read_file(path);
    ck_assert_str_eq(text, doc);
    free(text);
    /* rewrite, then it checks clean */
    ck_assert_int_eq(blocks(files, 0, &out), 0);
    free(out);
    ck_assert_int_eq(blocks(files, 1, &out), 0);
    ck_assert_msg(strstr(out, "0 differ"), "%s", out);
    free(out);
    text = tu_read_file(path);
    char want[512];
    snprintf(want, sizeof(want), "```\n$ herd --version\nherd %s\n",
             HERD_VERSION_STRING);
    const char *expect[] = {
        /* head 2: two lines, then ... */
        "```\n$ herd --help\nusage: herd <command> [options]   (herd "
        "<command> --help)\n\n...\n```\n",
        /* grep: the matching lines, ... for each run left out */
        "```\n$ herd \\\n    --help\n...\n  sim        run a scenario on the "
        "simulator\n  check      ",
        want,
        /* the second command of the block; stderr is shown too */
        "\n$ herd check x.json\nherd check: ",
        /* skip: the command stays, its old output goes */
        "```\n$ herd no-such-command\n```\n",
        "```sh\nmake test   # not a tour block\n```\n"};
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
        ck_assert_msg(strstr(text, expect[i]), "want\n%s\nin\n%s", expect[i],
                      text);
    free(text);
    /* an unknown rule is an error naming its line */
    f = fopen(path, "w");
    fputs("<!-- readme-block: tail 3 -->\n```\n$ herd --version\n```\n", f);
    fclose(f);
    ck_assert_int_eq(blocks(files, 1, &out), 1);
    ck_assert_msg(strstr(out, "line 1: unknown rule 'tail'"), "%s", out);
    free(out);
    unlink(path);
    rmdir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    if (access(PYTHON, X_OK) != 0) {
        printf("%s not found: skipped\n", PYTHON);
        return 77;
    }
    Suite *s = suite_create("readme");
    TCase *tc = tcase_create("readme");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_readme_matches_binary);
    tcase_add_test(tc, test_script_rules);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
