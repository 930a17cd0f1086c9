// The compiled bench of the RTL: the Verilated vdla_harness (the design beside the AXI protocol
// checker) with the bench's AXI memory (axi_memory.h), an AXI-lite master and the bench's
// monitors, all in C++, behind a small C interface that Python loads with ctypes
// (vdla_hw/rtl/compiled.py).
//
// Python never runs per cycle: it calls vdla_rd / vdla_wr (one AXI-lite transaction, however many
// cycles it takes), vdla_pause (run until irq rises or a cycle limit) and vdla_quiet (run until the
// memory bus is idle); the driver's own register code (driver.registers.RegisterDevice) makes
// those calls. The DRAM image is a byte buffer owned by Python (a numpy array) that the memory
// model reads and writes in place.
//
// Cycle conventions are those of vdla_hw/rtl/tb_memory.py (the cocotb bench's memory): edges are
// numbered; a burst whose AR handshake is sampled at edge a has its first R beat valid in cycle
// a + latency - 1 (sampled at edge a + latency), its beats one per cycle, bursts in order; a write
// burst whose last W beat is sampled at edge w has its B response valid in cycle
// w + write_latency - 1. With a stall probability p every channel pauses in each cycle with
// probability p (AR/AW/W: READY low; R/B: VALID low) and each burst gets an extra latency of
// 1..latency cycles with probability p. Addresses outside the mapped image's pages answer DECERR;
// poisoned byte ranges answer SLVERR or DECERR (reads return zeros, writes are dropped).

#include <cstdint>
#include <cstring>
#include <vector>

#include "Vvdla_harness.h"
#include "Vvdla_harness___024root.h"
#include "axi_memory.h"
#include "verilated.h"

// generated per build (srams.cpp): zero, size, copy out and copy in every on-chip memory
void vdla_clear_srams(Vvdla_harness___024root* root);
uint64_t vdla_srams_bytes();
void vdla_save_srams(Vvdla_harness___024root* root, uint8_t* out);
void vdla_load_srams(Vvdla_harness___024root* root, const uint8_t* in);

using namespace vdla;

struct Bench {
    VerilatedContext ctx;
    Vvdla_harness* top;
    int B;                    // bytes per beat
    uint64_t edge = 0;
    AxiMemory mem;
    // AXI-lite master
    bool l_aw_pending = false, l_w_pending = false, l_b_wait = false, l_ar_pending = false, l_r_wait = false;
    uint32_t l_rdata = 0;
    int l_rresp = 0, l_bresp = 0;
    // monitors
    bool prev_irq = false, prev_tog = false;
    int64_t start_edge = -1, irq_edge = -1;
    uint32_t ctrl_offset = 0, ctrl_start = 0;
    std::vector<int64_t> retire;  // (index, module, cycle) triples

    explicit Bench(int beat_bytes) : B(beat_bytes) {
        mem.B = beat_bytes;
        ctx.debug(0);
        ctx.randReset(0);
        top = new Vvdla_harness(&ctx);
        top->clk = 0;
        top->rst = 1;
        idle_inputs();
        top->eval();
    }
    ~Bench() {
        top->final();
        delete top;
    }

    void idle_inputs() {
        top->m_axi_arready = 0;
        top->m_axi_rvalid = 0;
        top->m_axi_awready = 0;
        top->m_axi_wready = 0;
        top->m_axi_bvalid = 0;
        top->s_axil_awvalid = 0;
        top->s_axil_wvalid = 0;
        top->s_axil_bready = 0;
        top->s_axil_arvalid = 0;
        top->s_axil_rready = 0;
        top->s_axil_wstrb = 0xF;
    }

    Sample sample() const {
        Sample s;
        const Vvdla_harness* t = top;
        s.arv = t->m_axi_arvalid; s.arr = t->m_axi_arready; s.rv = t->m_axi_rvalid; s.rr = t->m_axi_rready;
        s.awv = t->m_axi_awvalid; s.awr = t->m_axi_awready; s.wv = t->m_axi_wvalid; s.wr = t->m_axi_wready;
        s.bv = t->m_axi_bvalid; s.br = t->m_axi_bready;
        s.araddr = t->m_axi_araddr; s.arlen = t->m_axi_arlen; s.awaddr = t->m_axi_awaddr; s.awlen = t->m_axi_awlen;
        get_bytes(t->m_axi_wdata, s.wdata, B);
        s.wstrb = t->m_axi_wstrb;
        s.l_awv = t->s_axil_awvalid; s.l_awr = t->s_axil_awready; s.l_wv = t->s_axil_wvalid;
        s.l_wr = t->s_axil_wready; s.l_bv = t->s_axil_bvalid; s.l_br = t->s_axil_bready;
        s.l_arv = t->s_axil_arvalid; s.l_arr = t->s_axil_arready; s.l_rv = t->s_axil_rvalid;
        s.l_rr = t->s_axil_rready; s.l_rdata = t->s_axil_rdata; s.l_rresp = t->s_axil_rresp;
        s.l_awaddr = t->s_axil_awaddr; s.l_wdata = t->s_axil_wdata;
        return s;
    }

    // One clock cycle: sample the handshakes, rising edge, monitors, next inputs, falling edge
    // (its eval settles the outputs that depend on the new inputs; skipping it when no input
    // changed, through the model's edge detector, measured only 3 % faster on osdi18).
    void tick() {
        Sample s = sample();
        top->clk = 1;
        top->eval();
        ++edge;
        monitors();
        if (top->rst) {
            mem.clear();
        } else {
            mem.on_edge(s, edge, top);
        }
        axil(s);
        top->clk = 0;
        top->eval();
    }

    void monitors() {
        bool irq = top->irq;
        if (irq && !prev_irq) irq_edge = static_cast<int64_t>(edge);
        prev_irq = irq;
#ifdef VDLA_CORE_TOP
        bool tog = top->ret_tog;
        if (tog != prev_tog) {
            uint32_t valid = top->ret_valid;
            const uint32_t index[3] = {top->ret_index_load, top->ret_index_compute, top->ret_index_store};
            for (int m = 0; m < 3; ++m)
                if (valid >> m & 1) {
                    retire.push_back(index[m]);
                    retire.push_back(m);
                    retire.push_back(static_cast<int64_t>(top->ret_cycle));
                }
        }
        prev_tog = tog;
#endif
    }

    // The AXI-lite master's side of the edge: drop VALIDs whose handshake happened.
    void axil(const Sample& s) {
        if (l_aw_pending && s.l_awv && s.l_awr) {
            l_aw_pending = false;
            // the cocotb bench stamps a write where AWREADY rises: the slave's AWREADY is
            // combinational, so that is the cycle before the handshake's edge
            if (s.l_awaddr == ctrl_offset && (s.l_wdata & ctrl_start)) {
                start_edge = static_cast<int64_t>(edge) - 1;
                irq_edge = -1;
            }
        }
        if (l_w_pending && s.l_wv && s.l_wr) l_w_pending = false;
        if (l_b_wait && s.l_bv && s.l_br) { l_b_wait = false; l_bresp = 0; }
        if (l_ar_pending && s.l_arv && s.l_arr) l_ar_pending = false;
        if (l_r_wait && s.l_rv && s.l_rr) { l_r_wait = false; l_rdata = s.l_rdata; l_rresp = s.l_rresp; }
        top->s_axil_awvalid = l_aw_pending;
        top->s_axil_wvalid = l_w_pending;
        top->s_axil_bready = l_b_wait && !l_aw_pending && !l_w_pending;
        top->s_axil_arvalid = l_ar_pending;
        top->s_axil_rready = l_r_wait && !l_ar_pending;
    }

    bool bus_quiet() const {
        return !(top->chk_rd_out || top->chk_wr_out || top->m_axi_arvalid || top->m_axi_awvalid || top->m_axi_wvalid);
    }
};

#define VDLA_EXPORT __attribute__((visibility("default")))

extern "C" {

VDLA_EXPORT Bench* vdla_new(int beat_bytes, uint32_t ctrl_offset, uint32_t ctrl_start) {
    Bench* b = new Bench(beat_bytes);
    b->ctrl_offset = ctrl_offset;
    b->ctrl_start = ctrl_start;
    return b;
}

VDLA_EXPORT void vdla_free(Bench* b) { delete b; }

// rst high for 4 cycles, then 2 cycles out of reset (as the cocotb bench); the AXI-lite master and
// the monitors start afresh (an access that got no answer is abandoned).
VDLA_EXPORT void vdla_reset(Bench* b) {
    b->l_aw_pending = b->l_w_pending = b->l_b_wait = b->l_ar_pending = b->l_r_wait = false;
    b->start_edge = b->irq_edge = -1;
    b->retire.clear();
    b->idle_inputs();
    b->top->rst = 1;
    for (int k = 0; k < 4; ++k) b->tick();
    b->top->rst = 0;
    for (int k = 0; k < 2; ++k) b->tick();
}

VDLA_EXPORT void vdla_memory(Bench* b, int latency, int write_latency, double stall, uint64_t seed) {
    b->mem.configure(latency, write_latency, stall, seed);
}

// Map `mapped` bytes (whole pages) of `image` at bus address `base`; drops every poisoned range.
VDLA_EXPORT void vdla_map(Bench* b, uint32_t base, uint8_t* image, uint64_t mapped) {
    b->mem.base = base;
    b->mem.image = image;
    b->mem.mapped = mapped;
    b->mem.poison.clear();
}

VDLA_EXPORT void vdla_poison(Bench* b, uint64_t lo, uint64_t hi, int resp) { b->mem.poison.push_back({lo, hi, resp}); }

VDLA_EXPORT void vdla_clock(Bench* b, uint64_t n) {
    for (uint64_t k = 0; k < n; ++k) b->tick();
}

// One AXI-lite write; returns 0, or -1 when the slave has not answered within `limit` cycles.
VDLA_EXPORT int vdla_wr(Bench* b, uint32_t addr, uint32_t value, uint64_t limit) {
    b->top->s_axil_awaddr = addr;
    b->top->s_axil_wdata = value;
    b->top->s_axil_wstrb = 0xF;
    b->l_aw_pending = b->l_w_pending = b->l_b_wait = true;
    b->top->s_axil_awvalid = 1;
    b->top->s_axil_wvalid = 1;
    b->top->eval();
    for (uint64_t k = 0; k < limit; ++k) {
        b->tick();
        if (!b->l_b_wait) return 0;
    }
    return -1;
}

// One AXI-lite read into *value; returns the RRESP, or -1 when not answered within `limit` cycles.
VDLA_EXPORT int vdla_rd(Bench* b, uint32_t addr, uint32_t* value, uint64_t limit) {
    b->top->s_axil_araddr = addr;
    b->l_ar_pending = b->l_r_wait = true;
    b->top->s_axil_arvalid = 1;
    b->top->eval();
    for (uint64_t k = 0; k < limit; ++k) {
        b->tick();
        if (!b->l_r_wait) {
            *value = b->l_rdata;
            return b->l_rresp;
        }
    }
    return -1;
}

// Between STATUS polls: until irq rises, at most `poll` cycles; then 2 more.
VDLA_EXPORT void vdla_pause(Bench* b, uint64_t poll) {
    for (uint64_t k = 0; k < poll && !b->top->irq; ++k) b->tick();
    b->tick();
    b->tick();
}

// Until nothing is in flight on the memory bus (at most `limit` cycles); 1 if quiet.
VDLA_EXPORT int vdla_quiet(Bench* b, uint64_t limit) {
    for (uint64_t k = 0; k < limit; ++k) {
        if (b->bus_quiet()) return 1;
        b->tick();
    }
    return b->bus_quiet();
}

VDLA_EXPORT void vdla_clear_srams_of(Bench* b) { vdla_clear_srams(b->top->rootp); }
VDLA_EXPORT uint64_t vdla_srams_bytes_of(Bench*) { return vdla_srams_bytes(); }
VDLA_EXPORT void vdla_save_srams_of(Bench* b, uint8_t* out) { vdla_save_srams(b->top->rootp, out); }
VDLA_EXPORT void vdla_load_srams_of(Bench* b, const uint8_t* in) { vdla_load_srams(b->top->rootp, in); }

VDLA_EXPORT uint64_t vdla_edge(Bench* b) { return b->edge; }
VDLA_EXPORT uint64_t vdla_beats(Bench* b) { return b->mem.beats; }

// start edge, irq edge (-1: not seen) and the checker's outputs.
VDLA_EXPORT void vdla_status(Bench* b, int64_t* out) {
    out[0] = b->start_edge;
    out[1] = b->irq_edge;
    out[2] = b->top->chk_checks;
    out[3] = b->top->chk_violations;
    out[4] = b->top->chk_rules;
    out[5] = b->top->chk_rd_out;
    out[6] = b->top->chk_wr_out;
}

// Move up to `max` retire records (index, module 0/1/2, cycle) into `out`; returns how many.
VDLA_EXPORT int64_t vdla_retire(Bench* b, int64_t* out, int64_t max) {
    int64_t n = static_cast<int64_t>(b->retire.size()) / 3;
    if (n > max) n = max;
    std::memcpy(out, b->retire.data(), static_cast<size_t>(n) * 3 * sizeof(int64_t));
    b->retire.erase(b->retire.begin(), b->retire.begin() + n * 3);
    return n;
}

}  // extern "C"
