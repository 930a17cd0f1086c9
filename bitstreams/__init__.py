"""FPGA build recipes and their manifests (no vendor binaries in git).

``bitstreams.pynq_z1.write_project(config, out_dir)`` writes the PYNQ-Z1 Vivado project folder
(``vdla hw bitstream``) and returns the command that builds ``vdla.bit``/``vdla.hwh``.
"""
