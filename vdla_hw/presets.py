"""Named configurations, each parameter with the source it comes from.

A preset maps parameter name -> (value, source). ``vdla_hw.config`` validates them and derives
every size; nothing else in the project types these numbers.
"""

from __future__ import annotations

SPEC = "docs/spec.md section 2"
TIMING = "docs/spec.md section 5"

# Timing-contract and memory-port parameters shared by the FPGA presets; see docs/timing.md.
_PYNQ_PORT = {
    "MEM_BYTES_PER_BEAT": (8, "PYNQ-Z1 HP0 is a 64-bit AXI3 port (docs/spec.md section 5)"),
    "MEM_MAX_BURST": (16, "AXI3 bursts of at most 16 beats (docs/spec.md section 5)"),
    "MEM_LATENCY": (32, "first-beat latency of 'tens of cycles' on Zynq HP ports, from the AR handshake "
                        "(docs/spec.md section 5; 32 assumed)"),
    "MEM_WRITE_LATENCY": (16, "no early write response from the HP port's AFI: BRESP comes back from DDR "
                              "(docs/spec.md section 5; 16 cycles after the last beat assumed)"),
    "MEM_BURST_GAP": (0, "the HP port streams queued bursts back to back from its AFI FIFOs (docs/spec.md section 5)"),
    "DDR_BYTES_PER_CYCLE_CAP": (0, "0 = no cap; set to model DDR3 shared with the CPU (docs/spec.md section 5)"),
    "MEM_READ_OUTSTANDING": (8, "8 bursts of 16 beats fill the AFI's 128-beat read FIFO (docs/spec.md section 5); "
                                "ceil(MEM_LATENCY / 16) + 1 = 3 already stream at full rate"),
    "MEM_WRITE_OUTSTANDING": (8, "8 bursts of 16 beats fill the AFI's 128-beat write FIFO (docs/spec.md section 5)"),
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

PRESETS: dict[str, dict[str, tuple[object, str]]] = {
    "osdi18": {
        "LOG_INP_WIDTH": (3, SPEC + ": int8 inputs"),
        "LOG_WGT_WIDTH": (3, SPEC + ": int8 weights"),
        "LOG_ACC_WIDTH": (5, SPEC + ": int32 accumulators"),
        "LOG_BATCH": (0, SPEC + ": BATCH 1 (TVM paper section 6.4)"),
        "LOG_BLOCK": (4, SPEC + ": 16x16 GEMM core (TVM paper section 6.4)"),
        "LOG_UOP_BUFF_SIZE": (15, SPEC + ": 32 kB micro-op SRAM"),
        "LOG_INP_BUFF_SIZE": (15, SPEC + ": 32 kB input SRAM (TVM paper section 6.4)"),
        "LOG_WGT_BUFF_SIZE": (15, SPEC + ": 32 kB weight SRAM (TVM paper section 6.4)"),
        "LOG_ACC_BUFF_SIZE": (17, SPEC + ": 128 kB accumulator SRAM (TVM paper section 6.4)"),
        "CLOCK_MHZ": (200.0, SPEC + ": the TVM paper's text says 200 MHz"),
        **_PYNQ_PORT,
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
        "CLOCK_MHZ": (100.0, SPEC + ": every measured VTA result used 100 MHz"),
        **_PYNQ_PORT,
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
        **_PYNQ_PORT,
        "MEM_LATENCY": (8, "short first-beat latency keeps RTL tests fast"),
        "MEM_WRITE_LATENCY": (4, "short write response keeps RTL tests fast"),
        "MEM_READ_OUTSTANDING": (4, "few bursts in flight, so RTL tests reach the outstanding limit"),
        "MEM_WRITE_OUTSTANDING": (2, "few bursts in flight, so RTL tests reach the outstanding limit"),
        "CMD_QUEUE_DEPTH": (8, "shallow queues exercise back-pressure in small programs"),
        "TOKEN_QUEUE_DEPTH": (16, "shallow FIFOs exercise token overflow checks"),
    },
}

DEFAULT_PRESET = "osdi18"
