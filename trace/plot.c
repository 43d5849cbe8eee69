/* trace/plot.c - start gnuplot on a script of plots/ with fork/exec: the
 * file names travel as separate argv entries (ARG1..ARG9 in the script),
 * so no shell and no quoting is involved. gnuplot's own messages go to
 * our stderr. A script that stands alone in an output folder runs there
 * (its data file named relative to it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/plot.h"

#define PLOT_MAX_ARGS 9 /* gnuplot -c passes ARG1..ARG9 */
#define PLOT_EXEC_FAILED 127

int trace_plot_available(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char dir[4096];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof(dir), "%.*s/gnuplot", (int)n, p);
        if (n && access(dir, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* fork/exec gnuplot with argv (in folder dir when not NULL) and wait. */
static herd_status_t plot_exec(const char *dir, const char *const *argv,
                               const char *what, char *err, size_t errlen)
{
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return HERD_ERR_IO;
    }
    if (pid == 0) {
        if (dir && chdir(dir))
            _exit(PLOT_EXEC_FAILED);
        execvp("gnuplot", (char *const *)argv);
        _exit(PLOT_EXEC_FAILED);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            return HERD_ERR_IO;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return HERD_OK;
    snprintf(err, errlen, "gnuplot %s failed (%s %d)", what,
             WIFEXITED(status) ? "exit status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return HERD_ERR_IO;
}

herd_status_t trace_plot_run(const char *plots_dir, const char *script,
                             const char *const *args, int nargs, char *err,
                             size_t errlen)
{
    if (nargs < 0 || nargs > PLOT_MAX_ARGS)
        return HERD_ERR_INVALID_ARG;
    if (!trace_plot_available()) {
        snprintf(err, errlen,
                 "gnuplot not found on PATH: install it (e.g. "
                 "apt-get install gnuplot-nox) to get plots");
        return HERD_ERR_NOT_FOUND;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", plots_dir, script);
    if (access(path, R_OK)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HERD_ERR_NOT_FOUND;
    }
    const char *argv[PLOT_MAX_ARGS + 4] = {"gnuplot", "-c", path};
    for (int i = 0; i < nargs; i++)
        argv[3 + i] = args[i];
    argv[3 + nargs] = NULL;
    return plot_exec(NULL, argv, script, err, errlen);
}

herd_status_t trace_plot_run_gp(const char *dir, const char *name, char *err,
                                size_t errlen)
{
    if (!trace_plot_available()) {
        snprintf(err, errlen,
                 "gnuplot not found on PATH: install it (e.g. "
                 "apt-get install gnuplot-nox) to get plots");
        return HERD_ERR_NOT_FOUND;
    }
    char file[1024];
    snprintf(file, sizeof(file), "%s.gp", name);
    const char *argv[] = {"gnuplot", file, NULL};
    return plot_exec(dir, argv, file, err, errlen);
}
