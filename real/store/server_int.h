/* real/store/server_int.h - what the store server's two halves share: the
 * connection and listener side (server.c: limits, timers, accept) and the
 * request side (server_req.c: the table, parked get/wait). */
#ifndef HERD_REAL_STORE_SERVER_INT_H
#define HERD_REAL_STORE_SERVER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "real/store/map.h"
#include "real/store/proto.h"
#include "real/store/store.h"

struct bufferevent;
struct event;
struct event_base;
struct evconnlistener;

typedef struct srv_waiter srv_waiter_t;

typedef struct srv_conn {
    store_server_t *srv;
    struct bufferevent *bev;
    struct event *timer; /* authentication and stalled-frame deadlines */
    int authed;
    int proto;   /* SRV_PROTO_*: told by the connection's first bytes */
    int closing; /* a final reply is queued; free once it is flushed */
    srv_waiter_t *waiter;
    double t_accept;
    double t_frame;  /* when the partial frame at the head began */
    size_t need;     /* its size once its length field is in, else 0 */
    int partial;     /* a frame has begun and is not complete */
    size_t buffered; /* input bytes counted in srv->buffered */
    char peer[96];
    struct srv_conn *prev, *next;
} srv_conn_t;

struct store_server {
    struct event_base *base;
    struct evconnlistener *lis;
    struct event *stop_ev, *resume_ev;
    int stop_fd;
    pthread_t thread;
    char *token;
    int port;
    store_limits_t lim;
    store_map_t *map;
    srv_conn_t *conns;
    int nconns;
    size_t buffered; /* unprocessed input bytes over all connections */
    srv_waiter_t *waiters;
    double last_log; /* rate-limited messages: when the last went out */
    unsigned long suppressed;
};

/* TCPS: torch >= 2's TCPStore; TCPS1: torch 1.x's numbering. */
enum {
    SRV_PROTO_UNKNOWN = 0,
    SRV_PROTO_HERD = 1,
    SRV_PROTO_TCPS = 2,
    SRV_PROTO_TCPS1 = 3
};

/* Result of handling one frame. */
enum { FRAME_NEXT = 0, FRAME_STOP = 1, FRAME_FREED = -1 };

double srv_now_s(void); /* CLOCK_MONOTONIC seconds */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void srv_conn_free(srv_conn_t *c);
/* Log the reason and close the connection; returns FRAME_FREED. */
int srv_conn_fail(srv_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Process input held back while the connection was parked. */
void srv_conn_resume(srv_conn_t *c);

/* server_req.c */
int srv_handle(srv_conn_t *c, const store_req_t *q);
void srv_waiter_free(srv_waiter_t *w);
/* Park `c` until keys[] all exist, or timeout_ms (<= 0: no limit); the
 * answer is the protocol's own (herd: a status frame; TCPStore: one
 * STOP_WAITING byte). */
herd_status_t srv_waiter_park(srv_conn_t *c, uint8_t op, int n,
                              const uint8_t *const *keys, const size_t *klens,
                              int64_t timeout_ms);
/* Answer every parked waiter whose keys now exist. */
void srv_wake(store_server_t *srv);
/* 1 when all n keys exist. */
int srv_keys_exist(const store_server_t *srv, int n, const void *const *keys,
                   const size_t *klens);

/* server_tcps.c: TCPStore clients. srv_detect settles c->proto from the
 * first bytes (FRAME_STOP while they are too few to tell); srv_tcps_frames
 * runs a TCPStore connection's commands, as conn_frames does frames. */
int srv_detect(srv_conn_t *c);
int srv_tcps_frames(srv_conn_t *c);

#endif
