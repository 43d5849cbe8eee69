/* fuzz/fuzz.h - helpers shared by the libFuzzer targets: the input as a
 * NUL-terminated string, or as a file for parsers that only read paths.
 * Every target is one fuzz_<parser>.c defining LLVMFuzzerTestOneInput. */
#ifndef HERD_FUZZ_H
#define HERD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input with a NUL appended (malloc'd; the caller frees). */
char *fz_string(const uint8_t *data, size_t size);

/* Write the input to this process's scratch file `name` (under a
 * private temporary folder made on first use) and return its path
 * (static storage). */
const char *fz_file(const char *name, const uint8_t *data, size_t size);

/* The private temporary folder fz_file writes into. */
const char *fz_dir(void);

#endif
