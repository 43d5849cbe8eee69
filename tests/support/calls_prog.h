/* tests/support/calls_prog.h - one program that runs every call of
 * issue 15's "calls users miss" (uneven collectives, batch p2p, coalesced
 * collectives, monitored_barrier, object collectives) with host buffers
 * and checks each result; the sim, tcp and mpi suites run it on their
 * engine. */
#ifndef HERD_TESTS_CALLS_PROG_H
#define HERD_TESTS_CALLS_PROG_H

#include <stddef.h>

#include <herd/herd.h>

/* Runs the checks on `c`. Returns 0 when every result is right, else the
 * number of the failed check with a reason in why. */
int calls_prog_check(herd_comm_t *c, char *why, size_t len);

/* Argument checks of the new calls (each must fail with a clear
 * message); 0 when all did. */
int calls_prog_bad_args(herd_comm_t *c, char *why, size_t len);

#endif
