# Add two vectors of int32 on the ALU and store the low bytes; runs on every preset.
.config tiny
.data a acc 4 random 1
.data b acc 4 random 2
.data y out 4
.uops add 0,4,0
LOAD uop sram=0 dram=add x=1
LOAD acc sram=0 dram=a x=4
LOAD acc sram=4 dram=b x=4
ALU add uop=0:1 iter=4x1 dst=1,0 src=1,0 push_next
STORE out sram=0 dram=y x=4 pop_prev push_prev
FINISH pop_next
