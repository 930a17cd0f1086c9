// The bench's AXI memory (the model of vdla_hw/rtl/tb_memory.py in C++) and what the compiled bench
// shares between its parts: byte access to ports of any width, the values sampled before an edge.
// Cycle conventions: see harness.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "Vvdla_harness.h"
#include "verilated.h"

namespace vdla {

constexpr uint32_t PAGE = 4096;
constexpr int OKAY = 0, SLVERR = 2, DECERR = 3;

// --- signal access whatever width Verilator gave the port -----------------------------------
template <typename T>
void put_bytes(T& sig, const uint8_t* src, int n) {
    uint64_t v = 0;
    std::memcpy(&v, src, n);
    sig = static_cast<T>(v);
}
template <std::size_t W>
void put_bytes(VlWide<W>& sig, const uint8_t* src, int n) {
    for (std::size_t w = 0; w < W; ++w) {
        uint32_t v = 0;
        int k = n - static_cast<int>(4 * w);
        if (k > 0) std::memcpy(&v, src + 4 * w, k < 4 ? k : 4);
        sig[w] = v;
    }
}
template <typename T>
void get_bytes(const T& sig, uint8_t* dst, int n) {
    uint64_t v = sig;
    std::memcpy(dst, &v, n);
}
template <std::size_t W>
void get_bytes(const VlWide<W>& sig, uint8_t* dst, int n) {
    for (std::size_t w = 0; w < W; ++w) {
        uint32_t v = sig[w];
        int k = n - static_cast<int>(4 * w);
        if (k > 0) std::memcpy(dst + 4 * w, &v, k < 4 ? k : 4);
    }
}

struct Burst {
    uint32_t addr = 0;
    int beats = 0;
    uint64_t avail = 0;       // first edge after which its first beat (or B) may be driven
    bool fetched = false;     // read data taken from memory (when the burst becomes available)
    int next = 0;             // next beat to send
    std::vector<uint8_t> data;
    std::vector<int> resp;
};

// Values sampled just before a rising edge (what the edge's flops see).
struct Sample {
    bool arv, arr, rv, rr, awv, awr, wv, wr, bv, br;
    bool l_awv, l_awr, l_wv, l_wr, l_bv, l_br, l_arv, l_arr, l_rv, l_rr;
    uint32_t araddr, arlen, awaddr, awlen, l_rdata, l_awaddr, l_wdata;
    int l_rresp;
    uint8_t wdata[16];
    uint32_t wstrb;
};

// The memory on the design's m_axi master: in-order bursts with the configured latencies, random
// stalls and extra latency, DECERR outside the mapped pages, poisoned ranges.
struct AxiMemory {
    int B = 4;                // bytes per beat
    int latency = 2, write_latency = 2;
    double stall = 0.0;
    std::mt19937_64 rng;
    std::mt19937_64 pause_rng[5];
    uint32_t base = 0;
    uint8_t* image = nullptr;
    uint64_t mapped = 0;      // bytes mapped (whole pages)
    struct Poison { uint64_t lo, hi; int resp; };
    std::vector<Poison> poison;
    std::deque<Burst> reads, writes, bresps;
    std::deque<std::pair<std::vector<uint8_t>, uint32_t>> wbeats;  // W beats not yet matched (data, strb)
    std::deque<uint64_t> wedges;
    uint64_t beats = 0;
    bool r_out = false, b_out = false;  // driving R / B this cycle
    bool pause[5] = {false, false, false, false, false};

    void configure(int lat, int wlat, double p, uint64_t seed) {
        latency = lat;
        write_latency = wlat;
        stall = p;
        rng.seed(seed);
        for (int k = 0; k < 5; ++k) pause_rng[k].seed(seed * 7919 + k);
    }

    // In reset: nothing in flight.
    void clear() {
        reads.clear(); writes.clear(); bresps.clear(); wbeats.clear(); wedges.clear();
        r_out = b_out = false;
    }

    double uniform(std::mt19937_64& g) { return std::generate_canonical<double, 53>(g); }

    int extra() {
        if (stall > 0 && uniform(rng) < stall) return 1 + static_cast<int>(rng() % static_cast<uint64_t>(latency));
        return 0;
    }

    int resp_of(uint32_t addr, int n) const {
        if (addr < base || static_cast<uint64_t>(addr - base) + n > mapped) return DECERR;
        uint64_t off = addr - base;
        for (const Poison& p : poison)
            if (p.lo < off + n && off < p.hi) return p.resp;
        return OKAY;
    }

    // The memory's side of the edge just taken (handshakes in `s`), then its outputs for the next cycle.
    void on_edge(const Sample& s, uint64_t edge, Vvdla_harness* top) {
        if (s.arv && s.arr) {
            Burst b;
            b.addr = s.araddr;
            b.beats = static_cast<int>(s.arlen) + 1;
            b.avail = edge + latency - 1 + extra();
            if (!reads.empty() && reads.back().avail > b.avail) b.avail = reads.back().avail;
            reads.push_back(std::move(b));
        }
        if (s.rv && s.rr) {
            Burst& h = reads.front();
            if (++h.next == h.beats) reads.pop_front();
        }
        if (s.awv && s.awr) {
            Burst b;
            b.addr = s.awaddr;
            b.beats = static_cast<int>(s.awlen) + 1;
            writes.push_back(std::move(b));
        }
        if (s.wv && s.wr) {
            wbeats.emplace_back(std::vector<uint8_t>(s.wdata, s.wdata + B), s.wstrb);
            wedges.push_back(edge);
        }
        if (s.bv && s.br) bresps.pop_front();
        drain_writes();
        for (Burst& b : reads) {            // read data is taken when a burst becomes available
            if (b.fetched) continue;
            if (b.avail > edge) break;
            fetch(b);
        }
        for (int k = 0; k < 5; ++k) pause[k] = stall > 0 && uniform(pause_rng[k]) < stall;
        top->m_axi_arready = !pause[0];
        top->m_axi_awready = !pause[2];
        top->m_axi_wready = !pause[3];
        r_out = !reads.empty() && reads.front().fetched && !pause[1];
        top->m_axi_rvalid = r_out;
        if (r_out) {
            const Burst& h = reads.front();
            put_bytes(top->m_axi_rdata, &h.data[static_cast<size_t>(h.next) * B], B);
            top->m_axi_rresp = h.resp[h.next];
            top->m_axi_rlast = h.next == h.beats - 1;
            top->m_axi_rid = 0;
        }
        b_out = !bresps.empty() && bresps.front().avail <= edge && !pause[4];
        top->m_axi_bvalid = b_out;
        if (b_out) {
            top->m_axi_bresp = bresps.front().resp[0];
            top->m_axi_bid = 0;
        }
    }

    void fetch(Burst& b) {
        b.data.assign(static_cast<size_t>(b.beats) * B, 0);
        b.resp.assign(b.beats, OKAY);
        for (int n = 0; n < b.beats; ++n) {
            uint32_t addr = b.addr + n * B;
            b.resp[n] = resp_of(addr, B);
            if (b.resp[n] == OKAY) std::memcpy(&b.data[static_cast<size_t>(n) * B], image + (addr - base), B);
        }
        beats += b.beats;
        b.fetched = true;
    }

    // Match W beats to AW bursts in order; a complete burst is written and gets its B response.
    void drain_writes() {
        while (!writes.empty() && static_cast<int>(wbeats.size()) >= writes.front().beats) {
            Burst b = std::move(writes.front());
            writes.pop_front();
            int resp = OKAY;
            uint64_t last = 0;
            for (int n = 0; n < b.beats; ++n) {
                auto& beat = wbeats.front();
                uint32_t addr = b.addr + n * B;
                int r = resp_of(addr, B);
                if (r == OKAY) {
                    uint8_t* dst = image + (addr - base);
                    for (int k = 0; k < B; ++k)
                        if (beat.second >> k & 1) dst[k] = beat.first[k];
                } else {
                    resp = r;
                }
                last = wedges.front();
                wbeats.pop_front();
                wedges.pop_front();
            }
            beats += b.beats;
            b.avail = last + write_latency - 1 + extra();
            if (!bresps.empty() && bresps.back().avail > b.avail) b.avail = bresps.back().avail;
            b.resp.assign(1, resp);
            bresps.push_back(std::move(b));
        }
    }
};

}  // namespace vdla
