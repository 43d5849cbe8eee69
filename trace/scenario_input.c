/* trace/scenario_input.c - what a scenario's text must be before libfyaml
 * builds anything from it: bounded in size, UTF-8 without NUL bytes, and
 * free of anchors and aliases.
 *
 * The bytes are scanned first because libfyaml stops at a NUL (silently
 * dropping the rest of the file) and reports invalid UTF-8 without a
 * place. Anchors and aliases are rejected rather than expanded: nothing
 * in a scenario needs them, and resolving nested aliases multiplies a few
 * hundred bytes into gigabytes ("billion laughs"). The document is built
 * without FYPCF_RESOLVE_DOCUMENT, so an alias stays one node until this
 * walk finds it. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/escape.h"
#include "trace/scenario_int.h"

herd_status_t scn_check_bytes(const char *text, size_t n, const char *name,
                              char *err, size_t errlen)
{
    const unsigned char *s = (const unsigned char *)text;
    int line = 1, col = 1;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] ? core_utf8_len(s + i, n - i) : 0;
        if (!len) {
            if (s[i])
                snprintf(err, errlen,
                         "%s:%d:%d: invalid UTF-8 (byte 0x%02x); expected "
                         "UTF-8 text",
                         name, line, col, s[i]);
            else
                snprintf(err, errlen,
                         "%s:%d:%d: a NUL byte; expected UTF-8 text", name,
                         line, col);
            return HERD_ERR_PARSE;
        }
        if (s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
        i += len;
    }
    return HERD_OK;
}

herd_status_t scn_read_file(const char *path, char **out, size_t *len,
                            char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    char *buf = NULL;
    herd_status_t st = HERD_ERR_IO;
    if (fd < 0 || fstat(fd, &sb)) {
        snprintf(err, errlen, "%s: cannot open: %m", path);
        goto cleanup;
    }
    if (S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: cannot open: is a directory", path);
        goto cleanup;
    }
    /* Read up to the limit plus one byte, so that a file growing while it
     * is read (or a pipe, whose st_size is 0) is still caught. */
    size_t cap = 4096, n = 0;
    buf = malloc(cap + 1);
    if (!buf) {
        st = HERD_ERR_NO_MEMORY;
        goto cleanup;
    }
    for (;;) {
        if (n == cap) {
            if (cap > SCN_MAX_BYTES) {
                snprintf(err, errlen,
                         "%s: larger than %d MiB; a scenario is a short "
                         "text file",
                         path, SCN_MAX_BYTES >> 20);
                st = HERD_ERR_PARSE;
                goto cleanup;
            }
            char *grown = realloc(buf, cap * 2 + 1);
            if (!grown) {
                st = HERD_ERR_NO_MEMORY;
                goto cleanup;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0) {
            snprintf(err, errlen, "%s: cannot read: %m", path);
            goto cleanup;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
    st = HERD_OK;
cleanup:
    free(buf);
    if (fd >= 0)
        close(fd);
    return st;
}

/* Record the first alias below n (depth-first), with its place. */
static struct fy_node *scn_find_alias(struct fy_node *n, int depth)
{
    if (!n || depth > 256)
        return NULL;
    if (fy_node_is_alias(n))
        return n;
    void *it = NULL;
    if (fy_node_is_mapping(n)) {
        struct fy_node_pair *p;
        while ((p = fy_node_mapping_iterate(n, &it))) {
            struct fy_node *a = scn_find_alias(fy_node_pair_key(p), depth + 1);
            if (!a)
                a = scn_find_alias(fy_node_pair_value(p), depth + 1);
            if (a)
                return a;
        }
    } else if (fy_node_is_sequence(n)) {
        struct fy_node *item;
        while ((item = fy_node_sequence_iterate(n, &it))) {
            struct fy_node *a = scn_find_alias(item, depth + 1);
            if (a)
                return a;
        }
    }
    return NULL;
}

herd_status_t scn_check_no_aliases(struct fy_document *doc, const char *name,
                                   char *err, size_t errlen)
{
    int line = 0, col = 0;
    const char *what = NULL;
    size_t tlen = 0;
    const char *text = NULL;
    void *it = NULL;
    struct fy_anchor *a = fy_document_anchor_iterate(doc, &it);
    if (a) {
        text = fy_anchor_get_text(a, &tlen);
        scn_node_mark(fy_anchor_node(a), &line, &col, 0);
        what = "an anchor '&";
    } else {
        struct fy_node *n = scn_find_alias(fy_document_root(doc), 0);
        if (!n)
            return HERD_OK;
        text = fy_node_get_scalar(n, &tlen);
        scn_node_mark(n, &line, &col, 0);
        col -= col > 1; /* libfyaml's mark is the name's, after the '*' */
        what = "an alias '*";
    }
    char place[32] = "";
    if (line > 0)
        snprintf(place, sizeof(place), "%d:%d:", line, col);
    snprintf(err, errlen,
             "%s:%s %s%.*s'; scenarios do not use anchors or aliases "
             "(write the value out)",
             name, place, what, (int)(tlen > 64 ? 64 : tlen), text ? text : "");
    return HERD_ERR_PARSE;
}
