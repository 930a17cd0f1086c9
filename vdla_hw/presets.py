"""Named configurations, each parameter with the source it comes from.

A preset maps parameter name -> (value, source). ``vdla_hw.config`` validates them and derives
every size; nothing else in the project types these numbers.

The memory side is built from two tables, each fact once: :data:`PORTS` (the Zynq PS port the
accelerator's AXI master is wired to: its width, bursts, latencies and outstanding limits) and
:data:`PYNQ_Z1_DDR` (the DDR3 behind every port, shared with the CPU). A preset picks one port
(``_port("acp")``) and the board's DDR cap at its clock (``_ddr_cap``). docs/spec.md section 5
and docs/timing.md, "Ports", say how far each number is from a measurement.
"""

from __future__ import annotations

SPEC = "docs/spec.md section 2"
TIMING = "docs/spec.md section 5"
UG585 = "Zynq-7000 TRM (Xilinx UG585)"
A9_MPCORE = "Cortex-A9 MPCore TRM (ARM DDI 0407), 2.3.1 'AXI issuing capabilities'"
ARTIFACT = ("the TVM paper's ReQuEST'18 artifact (Moreau, Chen, Ceze, 'Leveraging the VTA-TVM Hardware-Software "
            "Stack for FPGA Acceleration of 8-bit ResNet-18 Inference', ReQuEST at ASPLOS'18, doi 10.1145/3229762.3229766; "
            "ctuning/ck-request-asplos18-resnet-tvm-fpga dissemination.publication/9375838469ad4029/paper.tex)")
VTA_PYNQ = "VTA's PYNQ build (apache/tvm-vta config/pkg_config.py, hardware/xilinx/scripts/vivado.tcl)"

# The PYNQ-Z1's DDR3: one 16-bit DDR3 device at 1050 MT/s (Digilent PYNQ-Z1 reference manual,
# "DDR3 memory"), behind the Zynq's DDR controller, which "was designed to have a maximum
# efficiency of approximately 75 %" (UG585 section 22.3.2, "DDR Efficiency"; its Table 22-5
# measures 79-97 % per access pattern with four HP masters; we take the design figure, not the
# best pattern). name -> (value, source).
PYNQ_Z1_DDR = {
    "bus_bits": (16, "Digilent PYNQ-Z1 reference manual: 512 MB DDR3, 16-bit bus"),
    "mega_transfers": (1050, "Digilent PYNQ-Z1 reference manual: DDR3 at 1050 Mbps per pin"),
    "efficiency": (0.75, f"{UG585} section 22.3.2: the DDR controller's design maximum efficiency, about 75 %"),
}


def ddr_bytes_per_s() -> float:
    """Usable DDR bandwidth of the PYNQ-Z1 for all masters together: 16 bit x 1050 MT/s x 75 %."""
    d = {k: v for k, (v, _) in PYNQ_Z1_DDR.items()}
    return d["bus_bits"] / 8 * d["mega_transfers"] * 1e6 * d["efficiency"]


def _ddr_cap(clock_mhz: float) -> tuple[float, str]:
    """DDR_BYTES_PER_CYCLE_CAP for a fabric clock: the usable DDR bandwidth in bytes per cycle.
    The CPU's share is 0 while the accelerator runs: the serial runtime polls STATUS over M_AXI_GP0
    from a loop in L1 (no DDR traffic; docs/spec.md section 5)."""
    cap = ddr_bytes_per_s() / (clock_mhz * 1e6)
    return cap, (f"PYNQ-Z1 DDR3, 16 bit x 1050 MT/s x 75 % ({UG585} 22.3.2) = {ddr_bytes_per_s() / 1e9:g} GB/s "
                 f"shared by every master, / {clock_mhz:g} MHz; the CPU only polls STATUS while the accelerator "
                 "runs, so the accelerator has all of it (docs/spec.md section 5)")


# The Zynq PS ports an accelerator master can use, each once; a preset picks one.
# name -> parameter -> (value, source). "estimate" marks a number no measurement was found for.
PORTS: dict[str, dict[str, tuple[object, str]]] = {
    "hp": {
        "MEM_PORT": ("hp", f"S_AXI_HP0: the AFI path straight to the DDR controller, not coherent ({UG585} ch. 5.3)"),
        "MEM_BYTES_PER_BEAT": (8, f"S_AXI_HP0 configured 64 bits wide ({UG585} ch. 5.3; 1,200 MB/s per interface "
                                  "suggested, Table 22-8)"),
        "MEM_MAX_BURST": (16, "the HP ports are AXI3: bursts of at most 16 beats (4-bit AxLEN)"),
        "MEM_LATENCY": (32, "estimate: first beat 'tens of cycles' after the AR handshake on an HP port; no published "
                            "cycle count found (docs/spec.md section 5)"),
        "MEM_WRITE_LATENCY": (16, "estimate: no early write response from the AFI, BRESP comes back from DDR; 16 "
                                  "cycles after the last beat (docs/spec.md section 5)"),
        "MEM_BURST_GAP": (0, "the HP port streams queued bursts back to back from its AFI FIFOs (docs/spec.md section 5)"),
        "MEM_READ_OUTSTANDING": (8, f"8 bursts of 16 beats fill the AFI's 128-beat read FIFO ({UG585} ch. 5.3); "
                                    "ceil(MEM_LATENCY / 16) + 1 = 3 already stream at full rate"),
        "MEM_WRITE_OUTSTANDING": (8, f"8 bursts of 16 beats fill the AFI's 128-beat write FIFO ({UG585} ch. 5.3)"),
    },
    "acp": {
        "MEM_PORT": ("acp", f"S_AXI_ACP: coherent through the SCU when AxCACHE[1] = 1 and AxUSER[0] = 1 ({UG585} "
                            "section 3.5.1, ACP requests); VTA's PYNQ build uses it (kBufferCoherent)"),
        "MEM_BYTES_PER_BEAT": (8, f"S_AXI_ACP is a 64-bit AXI3 slave ({UG585} section 3.5); VTA's PYNQ build: "
                                  "64-bit bus (fpga_log_axi_bus_width 6)"),
        "MEM_MAX_BURST": (16, "AXI3: bursts of at most 16 beats (4-bit AxLEN), as VTA's HLS masters issue them; the "
                              "A9 TRM optimises 4-beat cache-line bursts (not modelled: Sadri et al. 2013 measured "
                              "ACP on par with HP)"),
        "MEM_LATENCY": (32, f"estimate: no published cycle count found; {UG585} Table 22-8 ranks ACP the lowest-latency "
                            "PL interface, so not above the HP estimate (docs/spec.md section 5)"),
        "MEM_WRITE_LATENCY": (16, "estimate: the write response comes after the SCU/L2 accept the data; the HP "
                                  "estimate (docs/spec.md section 5)"),
        "MEM_BURST_GAP": (0, "estimate: queued bursts back to back, like HP (docs/spec.md section 5)"),
        "MEM_READ_OUTSTANDING": (7, f"{A9_MPCORE}: the ACP adds 7 read transactions"),
        "MEM_WRITE_OUTSTANDING": (3, f"{A9_MPCORE}: the ACP adds 3 write transactions"),
    },
}


def _port(name: str) -> dict[str, tuple[object, str]]:
    return dict(PORTS[name])


# Queue and datapath timing of the RTL, the same on every FPGA preset; see docs/timing.md.
_CORE_TIMING = {
    "CMD_QUEUE_DEPTH": (512, "VTA block design command queues (docs/spec.md section 5)"),
    "TOKEN_QUEUE_DEPTH": (1024, "VTA block design token FIFOs (docs/spec.md section 5)"),
    "FETCH_CYCLES_PER_INSN": (1, "fetch routes one 16-byte instruction per cycle after its burst arrives"),
    "QUEUE_LATENCY": (1, "a queued instruction or pushed token is visible one cycle later (registered FIFO)"),
    "GEMM_PIPELINE_DEPTH": (4, "read-multiply-add-write pipeline of the GEMM core, II=1 (docs/spec.md section 5); "
                               "pipelined for 100 MHz: the RTL writes an accumulator 4 cycles after issue (operand "
                               "read, DSP P register, adder-tree register, accumulate), before the retire cycle"),
    "ALU_CYCLES_PER_UOP": (2, "one accumulator read port: one ALU uop per 2 cycles (docs/spec.md section 5)"),
    "ALU_PIPELINE_DEPTH": (3, "read-operate-write pipeline of the ALU; pipelined for 100 MHz: the RTL writes 4 "
                              "cycles after issue (two acc reads, operand register, operate), before the retire cycle"),
    "INSN_OVERHEAD": (4, "cycles to decode an instruction and set up its loops in load/compute/store; "
                         "4 since the RTL was pipelined for 100 MHz: a LOAD/STORE's field sums, DSP products "
                         "and range check take one register stage each before the port request "
                         "(docs/rtl.md, 'How the timing contract is implemented')"),
}

_OSDI18_CORE = {
    "LOG_INP_WIDTH": (3, SPEC + ": int8 inputs"),
    "LOG_WGT_WIDTH": (3, SPEC + ": int8 weights"),
    "LOG_ACC_WIDTH": (5, SPEC + ": int32 accumulators"),
    "LOG_BATCH": (0, SPEC + ": BATCH 1 (TVM paper section 6.4)"),
    "LOG_BLOCK": (4, SPEC + ": 16x16 GEMM core (TVM paper section 6.4)"),
    "LOG_UOP_BUFF_SIZE": (15, SPEC + ": 32 kB micro-op SRAM"),
    "LOG_INP_BUFF_SIZE": (15, SPEC + ": 32 kB input SRAM (TVM paper section 6.4)"),
    "LOG_WGT_BUFF_SIZE": (15, SPEC + ": 32 kB weight SRAM (TVM paper section 6.4)"),
    "LOG_ACC_BUFF_SIZE": (17, SPEC + ": 128 kB accumulator SRAM (TVM paper section 6.4)"),
}

MEASURED_MHZ = 100.0   # the clock of every published VDLA/VTA measurement (docs/spec.md section 2)
PAPER_TEXT_MHZ = 200.0  # the clock the TVM paper's text states


def _measured_clock(why: str) -> tuple[float, str]:
    return MEASURED_MHZ, why


PRESETS: dict[str, dict[str, tuple[object, str]]] = {
    # The system that produced TVM Fig. 10 and 21: 100 MHz, ACP, the board's DDR.
    "osdi18": {
        **_OSDI18_CORE,
        "CLOCK_MHZ": _measured_clock(SPEC + ": the authors' ReQuEST'18 artifact (VTA's 2018 code, CLOCK_FREQ = 100) "
                                     "produced the figures at 100 MHz; Fig. 10's roof is 8 B x 100 MHz = 0.8 GB/s"),
        **_port("acp"),
        "DDR_BYTES_PER_CYCLE_CAP": _ddr_cap(MEASURED_MHZ),
        **_CORE_TIMING,
    },
    # The paper text's system: 200 MHz on HP0 without a DDR cap (osdi18 before issue 23).
    "osdi18-200": {
        **_OSDI18_CORE,
        "CLOCK_MHZ": (PAPER_TEXT_MHZ, SPEC + ": the TVM paper's text says 200 MHz (the figures were measured at 100)"),
        **_port("hp"),
        "DDR_BYTES_PER_CYCLE_CAP": (0.0, "0 = no cap: the paper text's system as osdi18 modelled it before issue 23 "
                                         f"(the board's DDR would allow {_ddr_cap(PAPER_TEXT_MHZ)[0]:g} B/cycle at "
                                         f"{PAPER_TEXT_MHZ:g} MHz; docs/spec.md section 5)"),
        **_CORE_TIMING,
    },
    "vta-pynq": {
        "LOG_INP_WIDTH": (3, SPEC + ": VTA pynq_sample.json"),
        "LOG_WGT_WIDTH": (3, SPEC + ": VTA pynq_sample.json"),
        "LOG_ACC_WIDTH": (5, SPEC + ": VTA pynq_sample.json"),
        "LOG_BATCH": (0, SPEC + ": VTA pynq_sample.json"),
        "LOG_BLOCK": (4, SPEC + ": VTA pynq_sample.json"),
        "LOG_UOP_BUFF_SIZE": (15, SPEC + ": VTA pynq_sample.json"),
        "LOG_INP_BUFF_SIZE": (15, SPEC + ": VTA pynq_sample.json"),
        "LOG_WGT_BUFF_SIZE": (18, SPEC + ": VTA pynq_sample.json, 256 kB weights"),
        "LOG_ACC_BUFF_SIZE": (17, SPEC + ": VTA pynq_sample.json"),
        "CLOCK_MHZ": _measured_clock(SPEC + f": every measured VTA result used 100 MHz ({VTA_PYNQ}: fpga_freq 100)"),
        **_port("acp"),
        "MEM_PORT": ("acp", f"{VTA_PYNQ}: PCW_USE_S_AXI_ACP 1, AXI_CACHE_BITS 1111, coherent = True"),
        "DDR_BYTES_PER_CYCLE_CAP": _ddr_cap(MEASURED_MHZ),
        **_CORE_TIMING,
    },
    "tiny": {
        "LOG_INP_WIDTH": (3, "int8 like the real presets"),
        "LOG_WGT_WIDTH": (3, "int8 like the real presets"),
        "LOG_ACC_WIDTH": (5, "int32 like the real presets"),
        "LOG_BATCH": (0, "BATCH 1 like the real presets"),
        "LOG_BLOCK": (2, "4x4 GEMM core so RTL tests run fast"),
        "LOG_UOP_BUFF_SIZE": (10, "256 micro-ops"),
        "LOG_INP_BUFF_SIZE": (9, "128 input vectors of 4 B"),
        "LOG_WGT_BUFF_SIZE": (9, "32 weight blocks of 16 B"),
        "LOG_ACC_BUFF_SIZE": (10, "64 accumulator vectors of 16 B"),
        "CLOCK_MHZ": (100.0, "same fabric clock as vta-pynq"),
        **_port("hp"),
        "DDR_BYTES_PER_CYCLE_CAP": (0.0, "0 = no cap: the RTL bench's memory models none"),
        **_CORE_TIMING,
        "MEM_LATENCY": (8, "short first-beat latency keeps RTL tests fast"),
        "MEM_WRITE_LATENCY": (4, "short write response keeps RTL tests fast"),
        "MEM_READ_OUTSTANDING": (4, "few bursts in flight, so RTL tests reach the outstanding limit"),
        "MEM_WRITE_OUTSTANDING": (2, "few bursts in flight, so RTL tests reach the outstanding limit"),
        "CMD_QUEUE_DEPTH": (8, "shallow queues exercise back-pressure in small programs"),
        "TOKEN_QUEUE_DEPTH": (16, "shallow FIFOs exercise token overflow checks"),
    },
}

DEFAULT_PRESET = "osdi18"

# Variants: a preset with some parameters replaced, each with its source. A variant is not a
# preset: nothing enumerates it (no synthesis record, shipped CPU analyses, sweep or RTL run is
# made for it); a study or a command names it (``Config.from_preset``, ``load_config``).
# name -> (base preset, parameter -> (value, source)).
VTA_HLS = "apache/tvm v0.6.0 vta/hardware/xilinx/src/vta.cc"
BOARD_CALIBRATION = ("calibrated: fitted so the simulator gives the measured time of tlc-pack/tophub record {record} "
                     "(compiler/data/board_records.csv; python -m experiments.board_calibration), so that record "
                     "leaves the validation; {why}")

VARIANTS: dict[str, tuple[str, dict[str, tuple[object, str]]]] = {
    # VTA's hardware on the PYNQ-Z1 as measured (issue 44 item 4): vta-pynq with VTA's HLS DMA
    # and the two memory numbers no publication gives, calibrated on two board records.
    "vta-pynq-board": ("vta-pynq", {
        "MEM_ROW_SERIAL": (1, f"{VTA_HLS}: load_2d, load_pad_2d and store copy a 2-D transfer with one memcpy per "
                              "row, so a row is requested after the previous one has completed"),
        "MEM_LATENCY": (59, BOARD_CALIBRATION.format(
            record="r09 (layer4.0.downsample, 1x1 stride 2: many short rows)",
            why="the ACP's first-beat latency seen by VTA's HLS masters through the SmartConnect, per row")),
        "DDR_BYTES_PER_CYCLE_CAP": (3.85, BOARD_CALIBRATION.format(
            record="r01 (layer4.0.conv2: 2.4 MB of weights streamed once)",
            why="the ACP's sustained read rate for VTA's 16-beat bursts, which the Cortex-A9 MPCore TRM (ARM DDI "
                "0407G 2.4.3) says perform 'significantly' below 4-beat cache-line bursts, without a number")),
    }),
    # osdi18 with the buffers the artifact that measured Fig. 10 and 21 allocated (osdi18 itself
    # keeps the paper text's 32 kB: changing the default preset re-times every recorded figure,
    # synthesis record and sweep; issue 44 item 5 allowed this variant instead).
    "osdi18-artifact": ("osdi18", {
        "LOG_UOP_BUFF_SIZE": (14, ARTIFACT + ": 'We allocate 16kB of resources for microkernel cache'"),
        "LOG_WGT_BUFF_SIZE": (18, ARTIFACT + ": '256kB for parameter storage'"),
    }),
}
