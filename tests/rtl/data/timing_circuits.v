// Hand-countable circuits for tests/rtl/test_sta.py: 7-series primitives instantiated directly, so
// the path through each is known cell by cell. Every circuit starts and ends at named flip-flops.
module timing_circuits (input clk, input [7:0] din, output [15:0] dout);
    wire one = 1'b1, zero = 1'b0;

    // N LUT levels between two flip-flops, N = 1, 3, 6
    genvar n, k;
    generate for (n = 1; n <= 6; n = n + 1) begin : chain
        if (n == 1 || n == 3 || n == 6) begin : used
            wire src_q, dst_q;
            wire [n:0] x;
            (* keep *) FDRE src (.C(clk), .CE(one), .R(zero), .D(din[n]), .Q(src_q));
            assign x[0] = src_q;
            for (k = 0; k < n; k = k + 1) begin : lut
                (* keep *) LUT1 #(.INIT(2'b10)) l (.I0(x[k]), .O(x[k + 1]));
            end
            (* keep *) FDRE dst (.C(clk), .CE(one), .R(zero), .D(x[n]), .Q(dst_q));
            assign dout[n] = dst_q;
        end
    end endgenerate

    // a carry chain of three CARRY4: S0 of the first to O3 of the last (CYINIT = 1, DI = 0, every other
    // S = 1: the chain propagates carry_src_q, so nothing folds to a constant)
    wire carry_src_q, carry_dst_q;
    wire [3:0] co0, co1, co2, o2;
    (* keep *) FDRE carry_src (.C(clk), .CE(one), .R(zero), .D(din[0]), .Q(carry_src_q));
    (* keep *) CARRY4 c0 (.CI(zero), .CYINIT(one), .DI(4'b0000), .S({3'b111, carry_src_q}), .CO(co0), .O());
    (* keep *) CARRY4 c1 (.CI(co0[3]), .CYINIT(zero), .DI(4'b0000), .S(4'b1111), .CO(co1), .O());
    (* keep *) CARRY4 c2 (.CI(co1[3]), .CYINIT(zero), .DI(4'b0000), .S(4'b1111), .CO(co2), .O(o2));
    (* keep *) FDRE carry_dst (.C(clk), .CE(one), .R(zero), .D(o2[3]), .Q(carry_dst_q));
    assign dout[0] = carry_dst_q;

    // block RAM read without and with the output register
    wire bram_addr_q, bram_plain_q, bram_reg_q;
    wire [15:0] do_plain, do_reg;
    (* keep *) FDRE bram_addr (.C(clk), .CE(one), .R(zero), .D(din[2]), .Q(bram_addr_q));
    (* keep *) RAMB18E1 #(.READ_WIDTH_A(18), .WRITE_WIDTH_A(18), .DOA_REG(0)) ram_plain (
        .CLKARDCLK(clk), .ENARDEN(one), .REGCEAREGCE(one), .RSTRAMARSTRAM(zero), .RSTREGARSTREG(zero),
        .ADDRARDADDR({9'd0, bram_addr_q, 4'd0}), .WEA(2'b00), .DIADI(16'd0), .DIPADIP(2'd0),
        .DOADO(do_plain), .CLKBWRCLK(clk), .ENBWREN(zero), .REGCEB(zero), .RSTRAMB(zero), .RSTREGB(zero),
        .ADDRBWRADDR(14'd0), .WEBWE(4'd0), .DIBDI(16'd0), .DIPBDIP(2'd0));
    (* keep *) RAMB18E1 #(.READ_WIDTH_A(18), .WRITE_WIDTH_A(18), .DOA_REG(1)) ram_reg (
        .CLKARDCLK(clk), .ENARDEN(one), .REGCEAREGCE(one), .RSTRAMARSTRAM(zero), .RSTREGARSTREG(zero),
        .ADDRARDADDR({9'd0, bram_addr_q, 4'd0}), .WEA(2'b00), .DIADI(16'd0), .DIPADIP(2'd0),
        .DOADO(do_reg), .CLKBWRCLK(clk), .ENBWREN(zero), .REGCEB(zero), .RSTRAMB(zero), .RSTREGB(zero),
        .ADDRBWRADDR(14'd0), .WEBWE(4'd0), .DIBDI(16'd0), .DIPBDIP(2'd0));
    (* keep *) FDRE bram_plain (.C(clk), .CE(one), .R(zero), .D(do_plain[0]), .Q(bram_plain_q));
    (* keep *) FDRE bram_reg (.C(clk), .CE(one), .R(zero), .D(do_reg[0]), .Q(bram_reg_q));
    assign dout[8] = bram_plain_q;
    assign dout[9] = bram_reg_q;

    // DSP48E1 multiply with no pipeline register, and with A/B, M and P registers
    wire dsp_a_q, dsp_comb_q, dsp_pipe_q;
    wire [47:0] p_comb, p_pipe;
    (* keep *) FDRE dsp_a (.C(clk), .CE(one), .R(zero), .D(din[4]), .Q(dsp_a_q));
    (* keep *) DSP48E1 #(.AREG(0), .BREG(0), .ACASCREG(0), .BCASCREG(0), .MREG(0), .PREG(0), .CREG(0),
                         .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0), .CARRYINSELREG(0), .INMODEREG(0))
        dsp_comb (.CLK(clk), .A({29'd0, dsp_a_q}), .B(18'd3), .C(48'd0), .D(25'd0), .OPMODE(7'b0000101),
                  .ALUMODE(4'd0), .INMODE(5'd0), .CARRYIN(zero), .CARRYINSEL(3'd0), .P(p_comb),
                  .CEA1(zero), .CEA2(zero), .CEB1(zero), .CEB2(zero), .CEC(zero), .CEM(zero), .CEP(zero),
                  .CEAD(zero), .CED(zero), .CECTRL(zero), .CEALUMODE(zero), .CEINMODE(zero), .CECARRYIN(zero),
                  .RSTA(zero), .RSTB(zero), .RSTC(zero), .RSTM(zero), .RSTP(zero), .RSTD(zero), .RSTCTRL(zero),
                  .RSTALUMODE(zero), .RSTINMODE(zero), .RSTALLCARRYIN(zero), .ACIN(30'd0), .BCIN(18'd0),
                  .PCIN(48'd0), .CARRYCASCIN(zero), .MULTSIGNIN(zero));
    (* keep *) DSP48E1 #(.AREG(1), .BREG(1), .ACASCREG(1), .BCASCREG(1), .MREG(1), .PREG(1), .CREG(0),
                         .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0), .CARRYINSELREG(0), .INMODEREG(0))
        dsp_pipe (.CLK(clk), .A({29'd0, dsp_a_q}), .B(18'd3), .C(48'd0), .D(25'd0), .OPMODE(7'b0000101),
                  .ALUMODE(4'd0), .INMODE(5'd0), .CARRYIN(zero), .CARRYINSEL(3'd0), .P(p_pipe),
                  .CEA1(one), .CEA2(one), .CEB1(one), .CEB2(one), .CEC(zero), .CEM(one), .CEP(one),
                  .CEAD(zero), .CED(zero), .CECTRL(zero), .CEALUMODE(zero), .CEINMODE(zero), .CECARRYIN(zero),
                  .RSTA(zero), .RSTB(zero), .RSTC(zero), .RSTM(zero), .RSTP(zero), .RSTD(zero), .RSTCTRL(zero),
                  .RSTALUMODE(zero), .RSTINMODE(zero), .RSTALLCARRYIN(zero), .ACIN(30'd0), .BCIN(18'd0),
                  .PCIN(48'd0), .CARRYCASCIN(zero), .MULTSIGNIN(zero));
    (* keep *) FDRE dsp_comb_ff (.C(clk), .CE(one), .R(zero), .D(p_comb[0]), .Q(dsp_comb_q));
    (* keep *) FDRE dsp_pipe_ff (.C(clk), .CE(one), .R(zero), .D(p_pipe[0]), .Q(dsp_pipe_q));
    // DSP48E1 with the pre-adder (USE_DPORT): A + D -> multiply -> P register, no A, D, AD or M register
    wire pre_a_q, pre_d_q;
    wire [47:0] p_pre;
    (* keep *) FDRE pre_a (.C(clk), .CE(one), .R(zero), .D(din[2]), .Q(pre_a_q));
    (* keep *) FDRE pre_d (.C(clk), .CE(one), .R(zero), .D(din[3]), .Q(pre_d_q));
    (* keep *) DSP48E1 #(.USE_DPORT("TRUE"), .AREG(0), .BREG(0), .ACASCREG(0), .BCASCREG(0), .ADREG(0), .DREG(0),
                         .MREG(0), .PREG(1), .CREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0),
                         .CARRYINSELREG(0), .INMODEREG(0))
        dsp_pre (.CLK(clk), .A({29'd0, pre_a_q}), .B(18'd3), .C(48'd0), .D({24'd0, pre_d_q}), .OPMODE(7'b0000101),
                 .ALUMODE(4'd0), .INMODE(5'b00100), .CARRYIN(zero), .CARRYINSEL(3'd0), .P(p_pre),
                 .CEA1(zero), .CEA2(zero), .CEB1(zero), .CEB2(zero), .CEC(zero), .CEM(zero), .CEP(one),
                 .CEAD(zero), .CED(zero), .CECTRL(zero), .CEALUMODE(zero), .CEINMODE(zero), .CECARRYIN(zero),
                 .RSTA(zero), .RSTB(zero), .RSTC(zero), .RSTM(zero), .RSTP(zero), .RSTD(zero), .RSTCTRL(zero),
                 .RSTALUMODE(zero), .RSTINMODE(zero), .RSTALLCARRYIN(zero), .ACIN(30'd0), .BCIN(18'd0),
                 .PCIN(48'd0), .CARRYCASCIN(zero), .MULTSIGNIN(zero));
    assign dout[10] = dsp_comb_q;
    assign dout[11] = dsp_pipe_q;
    // shift registers: a fixed-length SRL16E (a delay line of 4) and one whose address is a register
    wire srl_d_q, srl_a_q, srl_fixed_o, srl_addr_o, srl_fixed_q, srl_addr_q;
    (* keep *) FDRE srl_d (.C(clk), .CE(one), .R(zero), .D(din[5]), .Q(srl_d_q));
    (* keep *) FDRE srl_a (.C(clk), .CE(one), .R(zero), .D(din[6]), .Q(srl_a_q));
    (* keep *) SRL16E #(.INIT(16'h0000)) srl_fixed (.CLK(clk), .CE(one), .D(srl_d_q), .A0(one), .A1(one),
                                                 .A2(zero), .A3(zero), .Q(srl_fixed_o));
    (* keep *) SRL16E #(.INIT(16'h0000)) srl_addr (.CLK(clk), .CE(one), .D(din[7]), .A0(srl_a_q), .A1(zero),
                                                .A2(zero), .A3(zero), .Q(srl_addr_o));
    (* keep *) FDRE srl_fixed_ff (.C(clk), .CE(one), .R(zero), .D(srl_fixed_o), .Q(srl_fixed_q));
    (* keep *) FDRE srl_addr_ff (.C(clk), .CE(one), .R(zero), .D(srl_addr_o), .Q(srl_addr_q));
    assign dout[12] = srl_fixed_q;
    assign dout[13] = srl_addr_q;
    // LUT-RAM (RAM32M): port A read through ADDRA from a register; the write/read address ADDRD
    // arrives late, through three LUTs -- DOA does not depend on it
    wire ram_a_q, ram_d_q, ram_doa_q, ram_dod_q;
    wire [3:0] ram_d_late;
    wire [1:0] doa, dob, doc, dod;
    (* keep *) FDRE ram_a (.C(clk), .CE(one), .R(zero), .D(din[3]), .Q(ram_a_q));
    (* keep *) FDRE ram_d (.C(clk), .CE(one), .R(zero), .D(din[1]), .Q(ram_d_q));
    assign ram_d_late[0] = ram_d_q;
    generate for (k = 0; k < 3; k = k + 1) begin : ram_lut
        (* keep *) LUT1 #(.INIT(2'b10)) l (.I0(ram_d_late[k]), .O(ram_d_late[k + 1]));
    end endgenerate
    (* keep *) RAM32M ram (.WCLK(clk), .WE(one), .ADDRA({4'd0, ram_a_q}), .ADDRB(5'd0), .ADDRC(5'd0),
                           .ADDRD({4'd0, ram_d_late[3]}), .DIA(2'd0), .DIB(2'd0), .DIC(2'd0), .DID(2'd0),
                           .DOA(doa), .DOB(dob), .DOC(doc), .DOD(dod));
    (* keep *) FDRE ram_doa_ff (.C(clk), .CE(one), .R(zero), .D(doa[0]), .Q(ram_doa_q));
    (* keep *) FDRE ram_dod_ff (.C(clk), .CE(one), .R(zero), .D(dod[0]), .Q(ram_dod_q));
    assign dout[14] = ram_doa_q;
    assign dout[15] = ram_dod_q;
    assign {dout[7], dout[5:4], dout[2]} = 0;
endmodule
