# A matrix-vector product by hand: y = (W x) >> 4, x of 8 int8 values, W 4x8 int8, on `tiny`
# (BATCH 1, BLOCK_IN = BLOCK_OUT = 4). x is two INP elements of 4 values; W is two WGT elements,
# each 4 output rows by 4 input columns (element k holds W[:, 4k:4k+4]).
#
#   vdla asm examples/gemm.s -o gemm.npz && vdla exec gemm.npz -o after.npz && vdla dump after.npz y
.config tiny
.data x inp 2 random 1
.data w wgt 2 random 2
.data y out 1
.uops zero 0,0,0                 # dst 0: the accumulator to clear
.uops mac 0,0,0                  # acc[0] += inp[j] Wj^T, for j = 0, 1 (the GEMM's inner loop)
.uops scale 0,0,0                # the ALU's dst and src: acc[0]
# compute's micro-op table: zero at 0, mac at 1, scale at 2
LOAD uop sram=0 dram=zero x=1
LOAD uop sram=1 dram=mac x=1
LOAD uop sram=2 dram=scale x=1
# the load module fetches x and W, then tells compute they are in SRAM (one l2c token)
LOAD inp sram=0 dram=x x=2
LOAD wgt sram=0 dram=w x=2 push_next
GEMM uop=0:1 iter=1x1 reset                       # acc[0] = 0
GEMM uop=1:2 iter=1x2 src=0,1 wgt=0,1 pop_prev   # waits for x and W; j = 0, 1 moves src and wgt by j
ALU shr uop=2:3 iter=1x1 imm=4 push_next          # acc[0] >>= 4; out[0] = its low 8 bits; tells store
STORE out sram=0 dram=y x=1 pop_prev push_prev    # y <- out[0], then tells compute out[0] is free
FINISH pop_next                                   # waits for the store
