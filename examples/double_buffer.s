# Double buffering: four input tiles through two INP buffers, so that loading tile t+1 overlaps
# computing tile t. y[t] = (W x[t]) >> 3 for t = 0..3, on `tiny` (BATCH 1, BLOCK 4).
# Tokens (docs/spec.md section 1): every input load signals compute (l2c); the products of tiles
# 0 and 1 hand their buffer back to load (c2l), which waits for that before it refills it.
#
#   vdla asm examples/double_buffer.s -o db.npz && vdla exec db.npz -o after.npz && vdla dump after.npz y
#   vdla sim db.npz                  # cycles: each module busy, and waiting for its tokens
.config tiny
.data x inp 4 random 1
.data w wgt 1 random 2
.data y out 4
.uops tiles 0,0,0 1,1,0 2,0,0 3,1,0   # tile t: dst acc[t], src buffer t % 2, weights wgt[0]
# load: W once, then each tile into buffer t % 2
LOAD wgt sram=0 dram=w x=1
LOAD inp sram=0 dram=x x=1 push_next                  # tile 0 -> buffer 0
LOAD inp sram=1 dram=x+1 x=1 push_next                # tile 1 -> buffer 1
LOAD inp sram=0 dram=x+2 x=1 pop_next push_next       # waits until tile 0's product has read buffer 0
LOAD inp sram=1 dram=x+3 x=1 pop_next push_next       # waits until tile 1's product has read buffer 1
# compute
LOAD uop sram=0 dram=tiles x=4
GEMM uop=0:4 iter=1x1 reset                           # acc[0..3] = 0
GEMM uop=0:1 iter=1x1 pop_prev push_prev              # tile 0, then buffer 0 is free
GEMM uop=1:2 iter=1x1 pop_prev push_prev              # tile 1, then buffer 1 is free
GEMM uop=2:3 iter=1x1 pop_prev                        # tile 2
GEMM uop=3:4 iter=1x1 pop_prev                        # tile 3
ALU shr uop=0:4 iter=1x1 imm=3 push_next              # acc[t] >>= 3 for every tile; tells store
STORE out sram=0 dram=y x=4 pop_prev push_prev
FINISH pop_next
