/* core/escape.h - text from files and the network made safe to print.
 *
 * Keys, names and values read from a scenario, trace, timeline or model
 * end up in messages; printed raw, an ESC byte in them can retitle or
 * clear the terminal or hide the rest of the line. Like git and ls, herd
 * writes control characters as visible escapes instead: C0 controls and
 * DEL as \n, \t, \r or \xNN, C1 controls (U+0080..U+009F, which some
 * terminals obey as ESC sequences) as \u00NN, and bytes that are not
 * UTF-8 as \xNN. Printable text, including multi-byte UTF-8, is kept. */
#ifndef HERD_CORE_ESCAPE_H
#define HERD_CORE_ESCAPE_H

#include <stddef.h>

/* Write the escaped form of `s` into buf (len bytes, always terminated,
 * cut at a character boundary when it does not fit); returns buf, so it
 * can stand in a printf argument list. */
const char *core_escape(const char *s, char *buf, size_t len);

/* Escape a message in place (it may grow up to len - 1 bytes, the tail
 * cut). The one call the error paths make before a message leaves its
 * module. */
void core_escape_msg(char *msg, size_t len);

/* The length of the UTF-8 sequence at s (n bytes left; SIZE_MAX in a
 * NUL-terminated string, where a NUL ends any sequence), or 0 if it is
 * not a valid one (overlong forms, surrogates and code points above
 * U+10FFFF are invalid, as RFC 3629 says). Escaping and the scenario
 * reader's check of its bytes both go by it. */
size_t core_utf8_len(const unsigned char *s, size_t n);

/* 1 if s holds anything core_escape would change. */
int core_escape_needed(const char *s);

#endif
