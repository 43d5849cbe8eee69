/* core/escape.c - control characters and invalid UTF-8 written as
 * visible escapes (see escape.h for why and which). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"

size_t core_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0; /* also stops at a terminating NUL */
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* How many bytes of s are one printable character (1..4), or 0 if the
 * character at s must be escaped. */
static size_t esc_printable(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x20 || c == 0x7f)
        return 0;
    size_t len = core_utf8_len(s, SIZE_MAX);
    if (!len)
        return 0;
    if (c == 0xc2 && s[1] <= 0x9f)
        return 0; /* C1 control */
    return len;
}

/* The escape of the character at s into e (at least 7 bytes); returns
 * how many bytes of s it stands for. */
static size_t esc_one(const unsigned char *s, char *e)
{
    if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
        snprintf(e, 7, "\\u%04x", s[1]);
        return 2;
    }
    switch (s[0]) {
    case '\n':
        strcpy(e, "\\n");
        break;
    case '\t':
        strcpy(e, "\\t");
        break;
    case '\r':
        strcpy(e, "\\r");
        break;
    default:
        snprintf(e, 7, "\\x%02x", s[0]);
    }
    return 1;
}

const char *core_escape(const char *s, char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t k = 0;
    if (!len)
        return buf;
    while (*p) {
        char e[8];
        size_t n = esc_printable(p), w;
        const char *piece;
        if (n) {
            piece = (const char *)p;
            w = n;
        } else {
            n = esc_one(p, e);
            piece = e;
            w = strlen(e);
        }
        if (k + w >= len)
            break;
        memcpy(buf + k, piece, w);
        k += w;
        p += n;
    }
    buf[k] = '\0';
    return buf;
}

int core_escape_needed(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        size_t n = esc_printable(p);
        if (!n)
            return 1;
        p += n;
    }
    return 0;
}

void core_escape_msg(char *msg, size_t len)
{
    if (!msg || !len || !core_escape_needed(msg))
        return;
    char *copy = strdup(msg);
    if (!copy) {
        /* no memory for the copy: blank the offending bytes instead */
        for (unsigned char *p = (unsigned char *)msg; *p; p++)
            if (*p < 0x20 || *p == 0x7f || *p >= 0x80)
                *p = '?';
        return;
    }
    core_escape(copy, msg, len);
    free(copy);
}
