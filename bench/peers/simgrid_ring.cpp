/* bench/peers/simgrid_ring.cpp - the peer of bench/sim_scale in SimGrid
 * (S4U API, tested with Debian's SimGrid 3.32): the same chunked ring
 * all_reduce on the same cluster, so wall time and predicted time can be
 * put side by side with herd's simulator (bench/simgrid_compare.sh).
 *
 * Cluster, as herd's sim/net models it: nodes x GPUs, one host per rank;
 * each rank owns four links: intra-node egress and ingress ports
 * (intra bandwidth, the intra latency on the egress side) and NIC egress
 * and ingress (inter bandwidth and latency), so a switch is non-blocking
 * and a path's latency is counted once. Only the routes a ring uses
 * (r -> r+1) are declared, in one Full zone.
 *
 * Ring, as core/algo_ring.c lowers it: the data is split into `channels`
 * contiguous ranges, each an independent ring; per channel 2(p-1) steps
 * (reduce-scatter then all-gather) of one block, each block cut into J
 * chunks of at most `chunk` bytes; chunk j of step s is sent once chunk j
 * of step s-1 has arrived. One actor per (rank, channel) runs that
 * sequence. Mailboxes have a permanent receiver, so messages move as soon
 * as they are sent (herd's engine does not wait for the receiver either).
 * Modes: "fifo" (default) sends the chunks of one connection one after
 * the other, as herd's FIFO connections do, but the next starts when the
 * previous has arrived (SimGrid counts latency before the bytes move);
 * "herd" is the same sequence on links without latency, a chunk counting
 * as arrived one path latency after its transfer ended (herd's rule: the
 * next chunk of a connection starts when the last byte has left);
 * "async" sends each chunk as soon as it is ready, so chunks of one
 * connection share the link max-min, SimGrid's usual way. The network
 * model is CM02 without cross traffic or TCP window bound: plain max-min.
 *
 *   bench_peer_simgrid_ring [--nodes N] [--gpus-per-node G] [--bytes B]
 *       [--channels C] [--chunk B] [--intra-bw B/s] [--intra-lat s]
 *       [--inter-bw B/s] [--inter-lat s] [--mode fifo|herd|async]
 *       [--cfg=simgrid:option ...]
 * Defaults: herd's (64 x 8, 1 GiB, 16 channels, 2 MiB, 370e9 1e-6,
 * 50e9 4e-6). Prints one line "simgrid: ... predicted_ms X wall_s Y ...". */
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace
{

enum class ring_mode { fifo, async, herd };

struct ring_cfg {
    int nodes = 64, gpn = 8, channels = 16;
    uint64_t bytes = 1ull << 30, chunk = 2ull << 20;
    double intra_bw = 370e9, intra_lat = 1e-6;
    double inter_bw = 50e9, inter_lat = 4e-6;
    ring_mode mode = ring_mode::fifo;
};

/* n parts of len: part i (as core_split). */
uint64_t split(uint64_t len, uint64_t parts, uint64_t i)
{
    return len / parts + (i < len % parts ? 1 : 0);
}

/* The ring of one channel as rank r sees it (sizes in elements). */
struct ring_chan {
    uint64_t n; /* elements of the channel */
    uint64_t J; /* chunks per block */
    int p, r;

    uint64_t piece(int block, uint64_t j) const
    {
        return split(split(n, (uint64_t)p, (uint64_t)block), J, j);
    }
    int mod(int x) const { return ((x % p) + p) % p; }
    /* block sent at step s (RS: r-s, AG: r+1-(s-(p-1))) */
    int send_block(int s) const
    {
        return s < p - 1 ? mod(r - s) : mod(r + 1 - (s - (p - 1)));
    }
    int recv_block(int s) const
    {
        return s < p - 1 ? mod(r - s - 1) : mod(r - (s - (p - 1)));
    }
};

uint64_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (!strcmp(end, "K") || !strcmp(end, "KiB"))
        v *= 1024;
    else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
        v *= 1024 * 1024;
    else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
        v *= 1024.0 * 1024 * 1024;
    else if (*end) {
        fprintf(stderr, "simgrid_ring: bad size '%s'\n", s);
        exit(2);
    }
    return (uint64_t)v;
}

double parse_num(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v >= 0)) {
        fprintf(stderr, "simgrid_ring: bad number '%s'\n", s);
        exit(2);
    }
    return v;
}

void parse_args(int argc, char **argv, ring_cfg *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!v) {
            fprintf(stderr, "simgrid_ring: '%s' needs a value\n", a);
            exit(2);
        }
        i++;
        if (!strcmp(a, "--nodes"))
            c->nodes = (int)parse_num(v);
        else if (!strcmp(a, "--gpus-per-node"))
            c->gpn = (int)parse_num(v);
        else if (!strcmp(a, "--channels"))
            c->channels = (int)parse_num(v);
        else if (!strcmp(a, "--bytes"))
            c->bytes = parse_bytes(v);
        else if (!strcmp(a, "--chunk"))
            c->chunk = parse_bytes(v);
        else if (!strcmp(a, "--intra-bw"))
            c->intra_bw = parse_num(v);
        else if (!strcmp(a, "--intra-lat"))
            c->intra_lat = parse_num(v);
        else if (!strcmp(a, "--inter-bw"))
            c->inter_bw = parse_num(v);
        else if (!strcmp(a, "--inter-lat"))
            c->inter_lat = parse_num(v);
        else if (!strcmp(a, "--mode") && !strcmp(v, "fifo"))
            c->mode = ring_mode::fifo;
        else if (!strcmp(a, "--mode") && !strcmp(v, "async"))
            c->mode = ring_mode::async;
        else if (!strcmp(a, "--mode") && !strcmp(v, "herd"))
            c->mode = ring_mode::herd;
        else {
            fprintf(stderr, "simgrid_ring: unknown option '%s %s'\n", a, v);
            exit(2);
        }
    }
    if (c->nodes < 1 || c->gpn < 1 || c->nodes * c->gpn < 2 ||
        c->channels < 1 || c->bytes < 4 || c->chunk < 4 || c->intra_bw <= 0 ||
        c->inter_bw <= 0) {
        fprintf(stderr,
                "simgrid_ring: need >= 2 ranks, >= 1 channel, sizes >= 4 B, "
                "bandwidths > 0\n");
        exit(2);
    }
}

/* Hosts, per-rank links and the ring routes r -> r+1. */
std::vector<sg4::Host *> make_platform(const ring_cfg &c)
{
    int p = c.nodes * c.gpn;
    double lat_in = c.mode == ring_mode::herd ? 0 : c.intra_lat;
    double lat_x = c.mode == ring_mode::herd ? 0 : c.inter_lat;
    auto *zone = sg4::create_full_zone("cluster");
    std::vector<sg4::Host *> hosts(p);
    std::vector<sg4::Link *> io(4 * (size_t)p); /* intra out/in, nic out/in */
    for (int r = 0; r < p; r++) {
        std::string id = std::to_string(r);
        hosts[r] = zone->create_host("gpu" + id, 1e9);
        io[4 * r + 0] = zone->create_link("intra_out" + id, c.intra_bw)
                            ->set_latency(lat_in);
        io[4 * r + 1] =
            zone->create_link("intra_in" + id, c.intra_bw)->set_latency(0);
        io[4 * r + 2] =
            zone->create_link("nic_out" + id, c.inter_bw)->set_latency(lat_x);
        io[4 * r + 3] =
            zone->create_link("nic_in" + id, c.inter_bw)->set_latency(0);
    }
    for (int r = 0; r < p; r++) {
        int n = (r + 1) % p;
        int k = r / c.gpn == n / c.gpn ? 0 : 2;
        zone->add_route(hosts[r]->get_netpoint(), hosts[n]->get_netpoint(),
                        nullptr, nullptr,
                        {sg4::LinkInRoute(io[4 * r + k]),
                         sg4::LinkInRoute(io[4 * n + k + 1])},
                        false);
    }
    zone->seal();
    return hosts;
}

/* One rank's ring on one channel. `in_lat`: latency of the incoming
 * path, applied here in mode herd (whose links have none). */
void ring_actor(ring_chan g, sg4::Mailbox *in, sg4::Mailbox *out,
                ring_mode mode, size_t elem, double in_lat)
{
    static char token; /* payload pointer only; never read */
    int steps = 2 * (g.p - 1);
    for (int s = 0; s <= steps; s++) {
        for (uint64_t j = 0; j < g.J; j++) {
            if (s > 0 && g.piece(g.recv_block(s - 1), j) > 0) {
                char *data;
                sg4::CommPtr c = in->get_async<char>(&data);
                c->wait();
                if (mode == ring_mode::herd &&
                    c->get_finish_time() + in_lat > sg4::Engine::get_clock())
                    sg4::this_actor::sleep_until(c->get_finish_time() + in_lat);
            }
            if (s == steps)
                continue;
            uint64_t len = g.piece(g.send_block(s), j) * elem;
            if (len == 0)
                continue;
            if (mode == ring_mode::async)
                out->put_init(&token, len)->detach();
            else
                out->put(&token, len);
        }
    }
}

const char *mode_name(ring_mode m)
{
    return m == ring_mode::fifo    ? "fifo"
           : m == ring_mode::async ? "async"
                                   : "herd";
}

long peak_rss_mib()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

} // namespace

int main(int argc, char **argv)
{
    auto t0 = std::chrono::steady_clock::now();
    xbt_log_control_set("xbt_cfg.thres:warning");
    sg4::Engine e(&argc, argv); /* consumes --cfg=... */
    ring_cfg c;
    parse_args(argc, argv, &c);
    /* A pure max-min model: CM02 (no LV08 latency/bandwidth factors), no
     * reverse ack traffic, no TCP window bound; small actor stacks. */
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("contexts/stack-size:64");
    auto hosts = make_platform(c);
    int p = c.nodes * c.gpn;
    const size_t elem = 4; /* float32, as herd perf and bench_sim_scale */
    uint64_t count = c.bytes / elem, chunk_elems = c.chunk / elem;
    std::vector<sg4::Mailbox *> mb((size_t)p * c.channels);
    std::vector<sg4::ActorPtr> actors(mb.size());
    for (size_t i = 0; i < mb.size(); i++)
        mb[i] = sg4::Mailbox::by_name("m" + std::to_string(i));
    for (int r = 0; r < p; r++) {
        for (int ch = 0; ch < c.channels; ch++) {
            ring_chan g{split(count, c.channels, ch), 1, p, r};
            uint64_t maxblk = (g.n + p - 1) / p;
            g.J = maxblk <= chunk_elems ? 1 : (maxblk - 1) / chunk_elems + 1;
            if (g.n == 0)
                continue;
            sg4::Mailbox *in = mb[(size_t)r * c.channels + ch];
            sg4::Mailbox *out = mb[(size_t)((r + 1) % p) * c.channels + ch];
            int prev = (r + p - 1) % p;
            double in_lat =
                prev / c.gpn == r / c.gpn ? c.intra_lat : c.inter_lat;
            actors[(size_t)r * c.channels + ch] = sg4::Actor::create(
                "r" + std::to_string(r) + "c" + std::to_string(ch), hosts[r],
                ring_actor, g, in, out, c.mode, elem, in_lat);
        }
    }
    for (size_t i = 0; i < mb.size(); i++)
        if (actors[i])
            mb[i]->set_receiver(actors[i]);
    auto t1 = std::chrono::steady_clock::now();
    e.run();
    auto t2 = std::chrono::steady_clock::now();
    double setup = std::chrono::duration<double>(t1 - t0).count();
    double run = std::chrono::duration<double>(t2 - t1).count();
    printf("simgrid: %d ranks (%d x %d) ring %.6g GiB, %d ch, %llu KiB chunks, "
           "mode %s: "
           "predicted_ms %.6f wall_s %.3f (setup %.3f run %.3f) peak_rss_mib "
           "%ld\n",
           p, c.nodes, c.gpn, (double)c.bytes / (1 << 30), c.channels,
           (unsigned long long)(c.chunk >> 10), mode_name(c.mode),
           sg4::Engine::get_clock() * 1e3, setup + run, setup, run,
           peak_rss_mib());
    return 0;
}
