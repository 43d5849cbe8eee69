/* tests/support/testutil.h - helpers shared by the Check suites. */
#ifndef HERD_TESTUTIL_H
#define HERD_TESTUTIL_H

#include <check.h>
#include <stdio.h>

/* Run a suite with CK_NORMAL output; return the process exit code. */
int tu_run_suite(Suite *s);
/* Path of a file under the source tree / tests/data/ (static buffer per call
 * site is not used: writes into `buf`). */
const char *tu_src_path(char *buf, size_t len, const char *rel);
const char *tu_data_path(char *buf, size_t len, const char *rel);
/* The herd binary built with this tree. */
const char *tu_herd_binary(void);
/* Run a shell command, capture stdout+stderr into `out` (malloc'd,
 * caller frees); returns the exit status (or -1). */
int tu_run(const char *cmd, char **out);
/* Run `herd ARGS` (this tree's binary) with stderr merged into *out. */
int tu_herd(const char *args, char **out);
/* A whole small file (malloc'd, NUL-terminated), or NULL. */
char *tu_read_file(const char *path);
/* A fresh temporary directory (malloc'd path, caller frees). */
char *tu_tmpdir(void);
/* Removes a tu_tmpdir directory with everything in it; frees the path. */
void tu_tmpdir_free(char *dir);
/* DIR/NAME's whole contents (malloc'd, caller frees); fails the test when
 * it cannot be read. */
char *tu_read_in(const char *dir, const char *name);
/* What trace_scenario_write writes for the scenario `yaml` loads to
 * (NULL: a fresh default scenario): malloc'd, caller frees; fails the
 * test when it does not load or write. */
char *tu_scenario_written(const char *yaml);

#endif
