# A compiled convolution, instruction by instruction: a 3x3 conv of an 8-channel 4x4 input to 8
# channels (padding 1, requantized by a right shift of 6, then ReLU), on `tiny` (BLOCK 4), in
# tiles of 2 output rows x 4 columns with 2 virtual threads. Made by scripts/make_examples.py:
#
#   vdla compile conv2d --h 4 --w 4 --ic 8 --oc 8 --k 3 --pad 1 --shift 6 --relu --config tiny --schedule th=2,tw=4,toc=1,tic=1,vthreads=2 --seed 0 -o conv.npz
#   vdla disasm --annotate conv.npz
#
# Read it for: the micro-op table (one entry per kernel tap and output pixel), each thread's
# input tile loaded with its zero padding, the GEMMs whose loops walk the taps, the ALU's bias,
# shift and clip, and how the two threads' tokens interleave so that one loads while the other
# computes. `vdla asm examples/conv_tile.s -o c.npz` gives conv.npz back, byte for byte.
# vdla disasm of a bundle for configuration 1x4_i8w8a32_10_9_9_10-9d478cea:
# 52 instructions at byte 1536 of a 2368-byte DRAM image
.config tiny
.image 2368
.meta {"producer": "compiler.accel", "layer": {"op": "conv2d", "name": "conv2d", "n": 1, "h": 4, "w": 4, "ic": 8, "oc": 8, "k": 3, "stride": 1, "pad": 1, "shift": 6, "relu": true, "clip_lo": null, "clip_hi": 127, "per_channel_shift": false}, "schedule": "th=2,tw=4,toc=1,tic=1,vthreads=2,order=spatial", "output": {"symbol": "out", "shape": [1, 2, 4, 4, 1, 4]}, "ops": 18432}
.data inp inp 32 at=0 shape=1,2,4,4,1,4
.bytes 0x0000 df38bbff0268d132424d5e6d59ceac004f29f8f16bbdfafb8ffdb2cc238a501b
.bytes 0x0020 a19dcec557709c1a59c2c002029326787836f9df3da7d9c990bb2a40c584693a
.bytes 0x0040 3fcc70f9ffb775535c80664f21c7e44367cd3f8781475833ab5bfe4a0b505b3a
.bytes 0x0060 6d309f263f1015a7d63e67390f2b0d5887e8f3c968f89044e03319776f8088ac
.data wgt wgt 36 at=8 shape=2,2,3,3,4,4
.bytes 0x0080 8ef915fbe57593e1bbcec738c21283c3ff28944f9a7e4e73ea9bec06143ad483
.bytes 0x00a0 5b85a0ba19f5d62df1e041f9a1429a8096596bb543fd86ff58753435010f85a7
.bytes 0x00c0 bab339ecb3a6982f7182df631ea469bacb1dcc8c31c97bbe1eecfc12d9c1633c
.bytes 0x00e0 790a7123b87fad46fdcfc32601e423825cb856bae2bff1b90698332cd66a3a54
.bytes 0x0100 ae92a6e79a45a873988d84923cc91036bd872e25468b10a252f7cfd2d587a849
.bytes 0x0120 75512bb1ffbee395f9181223b10255e0bf9f3be604303a849ddb6d560995cf6d
.bytes 0x0140 8728625e262fbbb36f515eb11f3c6e83e86b0ec13ce98a141c25ad386fac1dd1
.bytes 0x0160 4a9e067025b96039a0b8c1790a0ce659de82ba609e34bef5862ccc8bede0d1d0
.bytes 0x0180 8129b609573c2f3308eb88a48c37c6c7e08a2e1d00da1538cc47e61811aaffbd
.bytes 0x01a0 847c57123cf20866072e6af9e81ad1eb9fcc2b9395cf1f090414e867d43fe8f1
.bytes 0x01c0 2c940637a4724ad91343258aae5581804a1244f87ff229f702b30ee084019801
.bytes 0x01e0 c2d08ba6b91710ccd8803c742c04d707c57ed69640bb1494bbdaf0b3047aff52
.bytes 0x0200 e18e38245197a2e18d6db06245419eff602e24abb29bc26e2134679cf5427871
.bytes 0x0220 ec695a5c60bba1660fc4e5b29dca14ba53688b8db7f1aedd8b48467eee628736
.bytes 0x0240 f05bbb2b5b93716cac5b1ec3c0a63ce9c94b083787b3940179ece853a9ea2c7a
.bytes 0x0260 f3ec3d712c645672ff318f0f49d53d292fd5da116ea8f022f08e001acd89516c
.bytes 0x0280 ca1144198a9c8c975680d9813fa83f2f9e341a357142a83d4172827964c82bf6
.bytes 0x02a0 65a8c41063a65c818c8c256d9308f51bc9ded1e732d3f79bfdcf3e72409d8d6e
.data bias acc 2 at=44
.bytes 0x02c0 e8f5ffffadf3ffff3cf4ffff540700000c0f0000ad0d000062050000f90e0000
.data out out 32 at=192
.uops uops at=224 \
    1,0,0 2,1,0 3,2,0 4,3,0 5,6,0 6,7,0 7,8,0 8,9,0 \
    1,1,1 2,2,1 3,3,1 4,4,1 5,7,1 6,8,1 7,9,1 8,10,1 \
    1,2,2 2,3,2 3,4,2 4,5,2 5,8,2 6,9,2 7,10,2 8,11,2 \
    1,6,3 2,7,3 3,8,3 4,9,3 5,12,3 6,13,3 7,14,3 8,15,3 \
    1,7,4 2,8,4 3,9,4 4,10,4 5,13,4 6,14,4 7,15,4 8,16,4 \
    1,8,5 2,9,5 3,10,5 4,11,5 5,14,5 6,15,5 7,16,5 8,17,5 \
    1,12,6 2,13,6 3,14,6 4,15,6 5,18,6 6,19,6 7,20,6 8,21,6 \
    1,13,7 2,14,7 3,15,7 4,16,7 5,19,7 6,20,7 7,21,7 8,22,7 \
    1,14,8 2,15,8 3,16,8 4,17,8 5,20,8 6,21,8 7,22,8 8,23,8 \
    1,0,0 2,0,0 3,0,0 4,0,0 5,0,0 6,0,0 7,0,0 8,0,0 \
    10,24,9 11,25,9 12,26,9 13,27,9 14,30,9 15,31,9 16,32,9 17,33,9 \
    10,25,10 11,26,10 12,27,10 13,28,10 14,31,10 15,32,10 16,33,10 17,34,10 \
    10,26,11 11,27,11 12,28,11 13,29,11 14,32,11 15,33,11 16,34,11 17,35,11 \
    10,30,12 11,31,12 12,32,12 13,33,12 14,36,12 15,37,12 16,38,12 17,39,12 \
    10,31,13 11,32,13 12,33,13 13,34,13 14,37,13 15,38,13 16,39,13 17,40,13 \
    10,32,14 11,33,14 12,34,14 13,35,14 14,38,14 15,39,14 16,40,14 17,41,14 \
    10,36,15 11,37,15 12,38,15 13,39,15 14,42,15 15,43,15 16,44,15 17,45,15 \
    10,37,16 11,38,16 12,39,16 13,40,16 14,43,16 15,44,16 16,45,16 17,46,16 \
    10,38,17 11,39,17 12,40,17 13,41,17 14,44,17 15,45,17 16,46,17 17,47,17 \
    10,9,0 11,9,0 12,9,0 13,9,0 14,9,0 15,9,0 16,9,0 17,9,0
.text 1536
LOAD uop sram=0 dram=uops y=1 x=160 stride=160 pad=0,0,0,0               # 0  compute: uop[0:160] <- DRAM uop uops, 160 elements
LOAD inp sram=0 dram=inp y=3 x=4 stride=4 pad=1,0,1,1                    # 1  load: inp[0:24] <- DRAM inp inp, 3 rows of 4 (contiguous), zero padding top 1 bottom 0 left 1 right 1
LOAD wgt sram=0 dram=wgt y=1 x=9 stride=18 pad=0,0,0,0 push_next         # 2  load: wgt[0:9] <- DRAM wgt wgt, 9 elements; then signals l2c
LOAD acc sram=0 dram=bias y=1 x=1 stride=1 pad=0,0,0,0                   # 3  compute: acc[0] <- DRAM acc bias, 1 element
GEMM uop=0:8 iter=1x1 dst=8,0 src=0,0 wgt=0,0 reset                      # 4  compute: acc <- 0 at the addressed accumulators (uop[0:8] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 accumulator rows reset)
GEMM uop=0:72 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev       # 5  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[0:72] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
LOAD inp sram=24 dram=inp y=3 x=4 stride=4 pad=1,0,1,1                   # 6  load: inp[24:48] <- DRAM inp inp, 3 rows of 4 (contiguous), zero padding top 1 bottom 0 left 1 right 1
LOAD wgt sram=9 dram=wgt+18 y=1 x=9 stride=18 pad=0,0,0,0 push_next      # 7  load: wgt[9:18] <- DRAM wgt wgt+18, 9 elements; then signals l2c
LOAD acc sram=9 dram=bias+1 y=1 x=1 stride=1 pad=0,0,0,0                 # 8  compute: acc[9] <- DRAM acc bias+1, 1 element
GEMM uop=80:88 iter=1x1 dst=8,0 src=0,0 wgt=0,0 reset                    # 9  compute: acc <- 0 at the addressed accumulators (uop[80:88] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 accumulator rows reset)
GEMM uop=80:152 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev     # 10  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[80:152] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
LOAD inp sram=0 dram=inp+16 y=3 x=4 stride=4 pad=1,0,1,1 pop_next        # 11  load: inp[0:24] <- DRAM inp inp+16, 3 rows of 4 (contiguous), zero padding top 1 bottom 0 left 1 right 1; waits for c2l
LOAD wgt sram=0 dram=wgt+9 y=1 x=9 stride=18 pad=0,0,0,0 push_next       # 12  load: wgt[0:9] <- DRAM wgt wgt+9, 9 elements; then signals l2c
GEMM uop=0:72 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev       # 13  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[0:72] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
LOAD inp sram=24 dram=inp+16 y=3 x=4 stride=4 pad=1,0,1,1 pop_next       # 14  load: inp[24:48] <- DRAM inp inp+16, 3 rows of 4 (contiguous), zero padding top 1 bottom 0 left 1 right 1; waits for c2l
LOAD wgt sram=9 dram=wgt+27 y=1 x=9 stride=18 pad=0,0,0,0 push_next      # 15  load: wgt[9:18] <- DRAM wgt wgt+27, 9 elements; then signals l2c
GEMM uop=80:152 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev     # 16  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[80:152] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
ALU add uop=72:80 iter=1x1 dst=8,0 src=1,0                               # 17  compute: acc[dst] <- add(acc[dst], acc[src]) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU shr uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=6 use_imm                 # 18  compute: acc[dst] <- shr(acc[dst], immediate 6) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU max uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=0 use_imm                 # 19  compute: acc[dst] <- max(acc[dst], immediate 0) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU min uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=127 use_imm push_next     # 20  compute: acc[dst] <- min(acc[dst], immediate 127) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits; then signals c2s
STORE out sram=1 dram=out y=1 x=8 stride=8 pad=0,0,0,0 pop_prev push_prev # 21  store: out[1:9] -> DRAM out out, 8 elements; waits for c2s; then signals s2c
ALU add uop=152:160 iter=1x1 dst=8,0 src=1,0                             # 22  compute: acc[dst] <- add(acc[dst], acc[src]) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU shr uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=6 use_imm               # 23  compute: acc[dst] <- shr(acc[dst], immediate 6) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU max uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=0 use_imm               # 24  compute: acc[dst] <- max(acc[dst], immediate 0) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU min uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=127 use_imm push_next   # 25  compute: acc[dst] <- min(acc[dst], immediate 127) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits; then signals c2s
STORE out sram=10 dram=out+16 y=1 x=8 stride=8 pad=0,0,0,0 pop_prev push_prev # 26  store: out[10:18] -> DRAM out out+16, 8 elements; waits for c2s; then signals s2c
LOAD inp sram=0 dram=inp+4 y=3 x=4 stride=4 pad=0,1,1,1 pop_next         # 27  load: inp[0:24] <- DRAM inp inp+4, 3 rows of 4 (contiguous), zero padding top 0 bottom 1 left 1 right 1; waits for c2l
LOAD wgt sram=0 dram=wgt y=1 x=9 stride=18 pad=0,0,0,0 push_next         # 28  load: wgt[0:9] <- DRAM wgt wgt, 9 elements; then signals l2c
GEMM uop=0:8 iter=1x1 dst=8,0 src=0,0 wgt=0,0 reset pop_next             # 29  compute: acc <- 0 at the addressed accumulators (uop[0:8] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 accumulator rows reset); waits for s2c
GEMM uop=0:72 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev       # 30  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[0:72] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
LOAD inp sram=24 dram=inp+4 y=3 x=4 stride=4 pad=0,1,1,1 pop_next        # 31  load: inp[24:48] <- DRAM inp inp+4, 3 rows of 4 (contiguous), zero padding top 0 bottom 1 left 1 right 1; waits for c2l
LOAD wgt sram=9 dram=wgt+18 y=1 x=9 stride=18 pad=0,0,0,0 push_next      # 32  load: wgt[9:18] <- DRAM wgt wgt+18, 9 elements; then signals l2c
GEMM uop=80:88 iter=1x1 dst=8,0 src=0,0 wgt=0,0 reset pop_next           # 33  compute: acc <- 0 at the addressed accumulators (uop[80:88] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 accumulator rows reset); waits for s2c
GEMM uop=80:152 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev push_prev     # 34  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[80:152] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c; then signals c2l
LOAD inp sram=0 dram=inp+20 y=3 x=4 stride=4 pad=0,1,1,1 pop_next        # 35  load: inp[0:24] <- DRAM inp inp+20, 3 rows of 4 (contiguous), zero padding top 0 bottom 1 left 1 right 1; waits for c2l
LOAD wgt sram=0 dram=wgt+9 y=1 x=9 stride=18 pad=0,0,0,0 push_next       # 36  load: wgt[0:9] <- DRAM wgt wgt+9, 9 elements; then signals l2c
GEMM uop=0:72 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev                 # 37  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[0:72] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c
LOAD inp sram=24 dram=inp+20 y=3 x=4 stride=4 pad=0,1,1,1 pop_next       # 38  load: inp[24:48] <- DRAM inp inp+20, 3 rows of 4 (contiguous), zero padding top 0 bottom 1 left 1 right 1; waits for c2l
LOAD wgt sram=9 dram=wgt+27 y=1 x=9 stride=18 pad=0,0,0,0 push_next      # 39  load: wgt[9:18] <- DRAM wgt wgt+27, 9 elements; then signals l2c
GEMM uop=80:152 iter=1x1 dst=8,0 src=0,24 wgt=9,9 pop_prev               # 40  compute: acc[dst] += inp[src] x wgt[wgt]^T (uop[80:152] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + 24j, wgt = uop.wgt + 9i + 9j: 72 vector-matrix products, 1,152 multiply-adds); out mirrors acc's low 8 bits; waits for l2c
ALU add uop=72:80 iter=1x1 dst=8,0 src=1,0                               # 41  compute: acc[dst] <- add(acc[dst], acc[src]) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU shr uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=6 use_imm                 # 42  compute: acc[dst] <- shr(acc[dst], immediate 6) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU max uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=0 use_imm                 # 43  compute: acc[dst] <- max(acc[dst], immediate 0) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU min uop=72:80 iter=1x1 dst=8,0 src=1,0 imm=127 use_imm push_next     # 44  compute: acc[dst] <- min(acc[dst], immediate 127) (uop[72:80] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits; then signals c2s
STORE out sram=1 dram=out+8 y=1 x=8 stride=8 pad=0,0,0,0 pop_prev        # 45  store: out[1:9] -> DRAM out out+8, 8 elements; waits for c2s
ALU add uop=152:160 iter=1x1 dst=8,0 src=1,0                             # 46  compute: acc[dst] <- add(acc[dst], acc[src]) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i, src = uop.src + i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU shr uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=6 use_imm               # 47  compute: acc[dst] <- shr(acc[dst], immediate 6) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU max uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=0 use_imm               # 48  compute: acc[dst] <- max(acc[dst], immediate 0) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits
ALU min uop=152:160 iter=1x1 dst=8,0 src=1,0 imm=127 use_imm push_next   # 49  compute: acc[dst] <- min(acc[dst], immediate 127) (uop[152:160] x 1x1 iterations (i, j) with dst = uop.dst + 8i: 8 vector operations of 4 lanes); out mirrors acc's low 8 bits; then signals c2s
STORE out sram=10 dram=out+24 y=1 x=8 stride=8 pad=0,0,0,0 pop_prev push_prev # 50  store: out[10:18] -> DRAM out out+24, 8 elements; waits for c2s; then signals s2c
FINISH pop_next                                                          # 51  compute: end of the program: raises done once every module has finished; waits for s2c
