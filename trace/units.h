/* trace/units.h - quantities with their units spelled out, as scenario
 * files and flags write them: sizes ("25MiB", "1GB", "4096B"), bandwidths
 * ("400Gbps", "370GB/s") and times ("5us", "1.5ms").
 *
 * Binary prefixes (KiB, MiB, GiB) are powers of 1024, decimal ones (KB,
 * MB, GB; Kbps, Mbps, Gbps) powers of 1000. Bandwidths are returned in
 * bytes per second, times in seconds. A bare number is bytes for sizes;
 * bandwidths and times need a unit. */
#ifndef HERD_TRACE_UNITS_H
#define HERD_TRACE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

/* The expected forms, for error messages. */
#define TRACE_FORM_BYTES "a size such as 4096, 512B, 64KiB, 25MiB or 1GB"
#define TRACE_FORM_BW "a bandwidth such as 400Gbps, 100Mbps, 370GB/s or 50GiB/s"
#define TRACE_FORM_TIME "a time such as 500ns, 5us, 1.5ms or 2s"

/* Each returns HERD_ERR_PARSE for a malformed value or unknown unit and
 * HERD_ERR_OVERFLOW for a value out of range; *out is set only on
 * success. Leading and trailing blanks, and one blank between the number
 * and the unit, are allowed. */
herd_status_t trace_parse_bytes(const char *s, uint64_t *out);
herd_status_t trace_parse_bandwidth(const char *s, double *bytes_per_s);
herd_status_t trace_parse_time(const char *s, double *seconds);

/* A size as command-line flags take it: every form trace_parse_bytes
 * takes, and nccl-tests' "128K", "1M", "4G" (either case, powers of
 * 1024). A lowercase "mb"/"kb"/"gb" is refused as ambiguous (1000 or
 * 1024?) with a message that offers both spellings; hex, signs and
 * fractions of a byte are refused. On error `why` says what (for
 * "FLAG: why"). */
herd_status_t trace_parse_bytes_flag(const char *s, uint64_t *out, char *why,
                                     size_t whylen);

/* Format a size with the largest binary unit that divides it exactly
 * ("25MiB", "1000B") and a time in the largest unit that keeps it >= 1
 * ("5us"). Write at most `len` bytes into buf. */
void trace_format_bytes(uint64_t bytes, char *buf, unsigned len);
void trace_format_time(double seconds, char *buf, unsigned len);

#endif
