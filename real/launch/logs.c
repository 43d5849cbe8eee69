/* real/launch/logs.c - torchrun's --log-dir, --redirects and --tee: a
 * worker's stdout/stderr go to <log_dir>/<run_id>/attempt_<round>/
 * <local_rank>/{stdout,stderr}.log when redirected or teed; a teed stream
 * is also copied to the launcher's own stream, each line prefixed with
 * "[<role><local_rank>]:" as torchrun does.
 *
 * The files are opened before fork (the child only dup2()s them), and
 * the launcher tails the teed files from its monitor loop, so no thread
 * or pipe is needed and a worker never blocks on a slow console. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "real/launch/launch_int.h"

/* One mode (0 none, 1 stdout, 2 stderr, 3 both) for local_rank, from a
 * spec that is a single digit or a map "0:3,1:1" (ranks absent: 0). */
int launch_std_mode(const char *spec, int local_rank)
{
    if (!spec || !*spec)
        return 0;
    if (!strchr(spec, ':'))
        return spec[0] - '0';
    for (const char *p = spec; *p;) {
        char *end = NULL;
        long r = strtol(p, &end, 10);
        int mode = end[1] - '0';
        if (r == local_rank)
            return mode;
        p = end + 2;
        if (*p == ',')
            p++;
    }
    return 0;
}

int launch_std_spec_valid(const char *spec)
{
    if (!spec || !*spec)
        return 0;
    if (!strchr(spec, ':'))
        return spec[0] >= '0' && spec[0] <= '3' && !spec[1];
    for (const char *p = spec;;) {
        char *end = NULL;
        errno = 0;
        long r = strtol(p, &end, 10);
        if (end == p || errno || r < 0 || r > 1000000 || *end != ':' ||
            end[1] < '0' || end[1] > '3')
            return 0;
        p = end + 2;
        if (!*p)
            return 1;
        if (*p != ',' || !p[1])
            return 0;
        p++;
    }
}

static int mkdir_p(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int rc = mkdir(path, 0755);
        *s = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

void launch_worker_logs_close(launch_worker_t *w)
{
    for (int s = 0; s < 2; s++) {
        if (w->log_fd[s] >= 0)
            close(w->log_fd[s]);
        if (w->tail_fd[s] >= 0)
            close(w->tail_fd[s]);
        w->log_fd[s] = w->tail_fd[s] = -1;
    }
}

herd_status_t launch_worker_logs_open(launch_group_t *g, launch_worker_t *w,
                                      int round, char *err, size_t errlen)
{
    const launch_opts_t *o = g->o;
    int redirect = launch_std_mode(o->redirects, w->local_rank);
    int tee = launch_std_mode(o->tee, w->local_rank);
    w->log_fd[0] = w->log_fd[1] = w->tail_fd[0] = w->tail_fd[1] = -1;
    w->at_bol[0] = w->at_bol[1] = 1;
    if (!(redirect | tee))
        return HERD_OK;
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/%s/attempt_%d/%d", g->log_dir, g->run_id,
             round, w->local_rank);
    if (mkdir_p(dir) != 0) {
        snprintf(err, errlen, "cannot create the log directory %s: %s", dir,
                 strerror(errno));
        return HERD_ERR_IO;
    }
    static const char *const names[2] = {"stdout.log", "stderr.log"};
    for (int s = 0; s < 2; s++) {
        if (!((redirect | tee) & (1 << s)))
            continue;
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", dir, names[s]);
        w->log_fd[s] =
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w->log_fd[s] >= 0 && (tee & (1 << s)))
            w->tail_fd[s] = open(path, O_RDONLY | O_CLOEXEC);
        if (w->log_fd[s] < 0 || ((tee & (1 << s)) && w->tail_fd[s] < 0)) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            launch_worker_logs_close(w);
            return HERD_ERR_IO;
        }
    }
    return HERD_OK;
}

/* Copy what the teed files gained to the launcher's streams, prefixing
 * each line that starts. */
void launch_group_tail(launch_group_t *g)
{
    char buf[4096];
    for (int i = 0; i < g->n; i++) {
        launch_worker_t *w = &g->w[i];
        for (int s = 0; s < 2; s++) {
            if (w->tail_fd[s] < 0)
                continue;
            FILE *to = s == 0 ? stdout : stderr;
            ssize_t n;
            while ((n = read(w->tail_fd[s], buf, sizeof(buf))) > 0)
                for (ssize_t k = 0; k < n; k++) {
                    if (w->at_bol[s])
                        fprintf(to, "[%s%d]:", g->o->role_name, w->local_rank);
                    fputc(buf[k], to);
                    w->at_bol[s] = buf[k] == '\n';
                }
            fflush(to);
        }
    }
}
