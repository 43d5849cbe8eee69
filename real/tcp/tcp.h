/* real/tcp/tcp.h - internal structures of the tcp engine, shared by its
 * files: the world (one per process: event base, listening socket, links
 * to peers, flight recorder), communicators (the world and subgroups, which
 * share the world's links), operations (one executing schedule each) and
 * the wire header.
 *
 * Data path: every peer pair uses one socket for both directions (the
 * first sender connects lazily; link.c settles simultaneous connects), so
 * each direction is a single FIFO, the schedule's per-connection order is
 * the socket's order, and acknowledgements ride on data. A message is
 * a 40-byte header then the payload, read straight into the destination
 * buffer when the receiving step is ready, else into a staging buffer. */
#ifndef HERD_REAL_TCP_H
#define HERD_REAL_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/flight.h"
#include "core/sched.h"
#include "core/steplog.h"

#include "real/store/store.h"
#include "real/tcp/wire.h"

struct event_base;
struct event;

/* What a message is matched on (besides the peer it came from). */
typedef struct tcp_key {
    uint16_t type, channel;
    int32_t group, tag;
    uint64_t seq;
} tcp_key_t;

typedef struct tcp_op tcp_op_t;
typedef struct tcp_world tcp_world_t;

/* A received message that is (or was) not read straight into its
 * destination: unexpected, or its step was not ready yet. */
typedef struct tcp_msg {
    struct tcp_msg *next; /* peer's unexpected list */
    tcp_key_t key;
    char *data;
    size_t len, got;
    tcp_op_t *owner; /* the op whose step claimed it, or NULL */
    uint32_t step;
} tcp_msg_t;

/* A send step queued on a link. */
typedef struct tcp_tx {
    struct tcp_tx *next;
    tcp_hdr_t hdr;
    const char *data;
    size_t sent;  /* bytes of header + payload written */
    tcp_op_t *op; /* NULL for control messages (then malloc'd) */
    uint32_t step;
} tcp_tx_t;

/* A posted receive step waiting for its message. */
typedef struct tcp_rx {
    struct tcp_rx *next, *prev;
    tcp_key_t key;
    tcp_op_t *op;
    uint32_t step;
} tcp_rx_t;

typedef enum tcp_peer_state {
    TCP_PEER_ALIVE,
    TCP_PEER_BYE, /* said goodbye: closed on purpose */
    TCP_PEER_DEAD /* connection lost without goodbye */
} tcp_peer_state_t;

typedef enum tcp_rx_mode {
    TCP_RX_HEADER, /* reading a header */
    TCP_RX_DIRECT, /* payload straight into the step's destination */
    TCP_RX_REDUCE, /* payload through a bounce buffer, reduced on the fly */
    TCP_RX_STAGED, /* payload into a tcp_msg_t */
    TCP_RX_DISCARD /* payload of a cancelled step: read and dropped */
} tcp_rx_mode_t;

#define TCP_BOUNCE_BYTES (256u << 10)

/* Incoming side of a socket: header, then payload. */
typedef struct tcp_rxstate {
    tcp_hdr_t hdr;
    size_t hdr_got;
    tcp_rx_mode_t mode;
    char *dst; /* DIRECT/REDUCE: destination; REDUCE: src at src */
    const char *src;
    size_t len, got;
    size_t have; /* REDUCE: bytes in bounce not yet reduced */
    tcp_msg_t *msg;
    tcp_op_t *op; /* DIRECT/REDUCE: the step being filled */
    uint32_t step;
    char *bounce;
    /* Read-ahead: small reads (headers, small payloads) take what the
     * socket has, up to TCP_PRE_BYTES, in one recv(). */
    char *pre;
    size_t pre_len, pre_off;
    int drained; /* this pass's read-ahead recv() did not fill it */
} tcp_rxstate_t;

#define TCP_PRE_BYTES 8192u

/* out_fd while the peer's connection, which will carry both directions,
 * is on its way (link.c: pair_accept). */
#define TCP_FD_AWAIT (-3)

typedef struct tcp_peer {
    tcp_world_t *w;
    int world_rank;
    tcp_peer_state_t state;
    int out_fd;   /* we write on it; -2: peer closed it; TCP_FD_AWAIT */
    int out_wait; /* out_fd waits for the peer's answer (link.c) */
    struct event *out_rev; /* readable: the peer closed the socket */
    struct event *out_wev; /* added while the queue is blocked */
    int writing;
    tcp_tx_t *tx_head, *tx_tail;
    int in_fd; /* we read from it; usually the same socket as out_fd */
    struct event *in_ev;
    tcp_rxstate_t rx;
    tcp_rx_t *posted_head, *posted_tail; /* posted receives in order */
    tcp_msg_t *unexp_head, *unexp_tail;  /* unclaimed messages in order */
    char host[64];
    int port;
    uint64_t suspect_ns; /* its socket broke; failed if nothing explains */
    char suspect_why[160];
} tcp_peer_t;

/* A socket accepted but not yet identified by its handshake. */
typedef struct tcp_pending {
    struct tcp_pending *next;
    int fd;
    struct event *ev;
    uint8_t buf[sizeof(tcp_handshake_t)];
    size_t got;
    uint64_t deadline_ns; /* the whole handshake, from accept */
    tcp_world_t *w;
} tcp_pending_t;

struct tcp_world {
    int rank, size, local_rank, local_size;
    int refs;
    struct event_base *base;
    int listen_fd;
    struct event *listen_ev, *sig_ev, *tick_ev;
    tcp_peer_t *peers;
    tcp_pending_t *pending;
    store_rdzv_t rdzv;
    store_client_t *store; /* rdzv.client */
    char prefix[64];       /* store key prefix */
    tcp_op_t *ops_head;    /* active ops, for failure propagation */
    int failed_rank;       /* first peer found dead, -1 if none */
    herd_status_t fail_status;
    char fail_msg[CORE_ERROR_MAX];
    int closing;
    core_flight_t flight;
    core_steplog_t *steplog; /* HERD_STEPS_DIR's steps-rank<r>.tsv */
    char *pool[8];           /* reusable staging buffers */
    size_t pool_len[8];
    int spin_us;
    uint64_t fail_grace_ns; /* a suspect peer is declared failed after */
    int yield;  /* more local ranks than cores: yield while spinning */
    int direct; /* waits read awaited sockets without the event loop */
    uint8_t cookie[TCP_COOKIE_BYTES]; /* the job's, from the store */
    int npending;                     /* accepted, handshake not yet in */
    int strangers;                    /* connections dropped at handshake */
    unsigned polls;                   /* passes of the wait loop (progress.c) */
};

typedef struct tcp_comm {
    herd_comm_t base;
    tcp_world_t *w;
    int closed;
} tcp_comm_t;

enum {
    TCP_STEP_WAITING = 0, /* deps pending */
    TCP_STEP_READY = 1,   /* deps done, not finished */
    TCP_STEP_DONE = 2
};

struct tcp_op {
    herd_req_t req;
    tcp_op_t *next_active, *prev_active;
    tcp_comm_t *comm;
    core_coll_args_t args;
    tcp_key_t key_base; /* type, group, seq, tag; channel per step */
    core_sched_t sched;
    char *buf[3];      /* IN, OUT, SCRATCH */
    char *scratch_own; /* malloc'd scratch, and the in-place copy */
    char *in_copy;
    size_t esize;
    void *arena; /* holds every per-step array below (post.c) */
    uint32_t *ndeps_left;
    uint32_t *dep_off, *dependents; /* CSR of reverse dependencies */
    uint8_t *state;
    uint8_t *enqueued;  /* SEND: queued on its link */
    int32_t *prev_send; /* previous SEND on the same (peer, channel) */
    int32_t *next_send;
    uint8_t *arrived;   /* RECV*: message fully received */
    tcp_msg_t **staged; /* RECV*: staging message */
    tcp_tx_t *tx;       /* one per step (used by SEND steps) */
    tcp_rx_t *rx;       /* one per step (used by RECV steps) */
    uint32_t *ready_q;
    uint32_t rq_head, rq_tail;
    uint32_t ndone;
    int done;
    int draining;
    herd_status_t status;
    uint64_t t_post, t_end;
    uint64_t *t_step; /* HERD_STEPS_DIR: when each step started */
    uint64_t fr_id;
    int started;
    tcp_world_t *w;
    char label[CORE_LABEL_MAX];
    char err[CORE_ERROR_MAX];
};

/* engine.c */
extern const herd_engine_ops_t tcp_engine_ops;
uint64_t tcp_now_ns(void);
int tcp_group_world_rank(const tcp_comm_t *c, int group_rank);

/* link.c: sockets, handshake, framing */
herd_status_t tcp_listen(tcp_world_t *w, const char *host, int *port_out,
                         char *err, size_t errlen);
herd_status_t tcp_peer_connect(tcp_world_t *w, tcp_peer_t *p, int tries);
void tcp_peer_suspect(tcp_world_t *w, tcp_peer_t *p, const char *why);
void tcp_check_suspects(tcp_world_t *w);
void tcp_tx_enqueue(tcp_world_t *w, tcp_peer_t *p, tcp_tx_t *tx);
void tcp_link_close_all(tcp_world_t *w, int send_bye);
void tcp_send_control(tcp_world_t *w, tcp_peer_t *p, int type, int tag);
herd_status_t tcp_flush_all(tcp_world_t *w, double timeout_s);
void tcp_peer_close_out(tcp_peer_t *p);
void tcp_peer_out_closed(tcp_world_t *w, tcp_peer_t *p);
void tcp_link_cancel_op(tcp_world_t *w, tcp_op_t *op);

/* recv.c: incoming messages and matching */
void tcp_peer_readable(tcp_world_t *w, tcp_peer_t *p);
void tcp_rx_post(tcp_world_t *w, tcp_peer_t *p, tcp_rx_t *rx);
void tcp_rx_unpost(tcp_peer_t *p, tcp_rx_t *rx);
char *tcp_buf_get(tcp_world_t *w, size_t len);
void tcp_buf_put(tcp_world_t *w, char *buf, size_t len);
void tcp_msg_free(tcp_world_t *w, tcp_msg_t *m);
void tcp_rx_cancel_op(tcp_world_t *w, tcp_op_t *op);
void tcp_abort_notice(tcp_world_t *w, int failed, int reporter);

/* exec.c: schedule execution */
herd_status_t tcp_op_post(tcp_comm_t *c, const core_coll_args_t *args,
                          tcp_op_t **out);
void tcp_op_step_done(tcp_op_t *op, uint32_t step);
void tcp_op_step_started(tcp_op_t *op);
void tcp_op_kick(tcp_op_t *op);
void tcp_op_recv_arrived(tcp_op_t *op, uint32_t step);
int tcp_op_rx_start(tcp_op_t *op, uint32_t step, tcp_rxstate_t *s);
void tcp_op_rx_reduce(tcp_rxstate_t *s, size_t n);
void tcp_op_fail(tcp_op_t *op, herd_status_t st, const char *msg);
void tcp_op_free(tcp_op_t *op);
void tcp_op_timeline(tcp_op_t *op, herd_tl_kind_t kind, uint64_t bytes,
                     uint64_t t0, uint64_t t1);

/* progress.c: waiting, timeouts, failures */
herd_status_t tcp_progress(tcp_world_t *w, int block_us);
herd_status_t tcp_op_wait(tcp_op_t *op);
void tcp_world_fail(tcp_world_t *w, int rank, herd_status_t st,
                    const char *why);

/* flight.c: the engine's glue to core/flight.c (the record itself) */
/* Writes this rank's record to dir; `reason`: "timeout", "signal", ... */
herd_status_t tcp_flight_dump(tcp_world_t *w, const char *dir,
                              const char *reason);
/* herd_flight_dump on the tcp engine. */
herd_status_t tcp_flight_dump_op(herd_comm_t *comm, const char *dir);

#endif
