"""Hardware presets: datasheet figures (dense, not sparse), links, overrides, files."""
import json

import pytest

from helpers import assert_file_error_names
from pcs.hardware import (GPU_NAMES, LINK_NAMES, LINKS, GPUSpec, LinkSpec, default_link_for_tier, get_gpu,
                          get_link, load_hardware_file, override)


def test_all_required_gpus_and_links_exist_with_sources():
    assert set(GPU_NAMES) >= {"h100-sxm", "h200", "b200", "a100-80gb", "l40s", "gh200"}
    assert set(LINK_NAMES) >= {"pcie-gen4-x16", "pcie-gen5-x16", "nvlink-c2c", "nvme-gen4", "rdma-200g", "rdma-400g"}
    for name in GPU_NAMES:
        assert "datasheet" in get_gpu(name).source
    for name in LINK_NAMES:
        link = get_link(name)
        assert link.source and link.setup_s > 0


@pytest.mark.parametrize("name,hbm_gb,hbm_tbps,bf16_dense_tflops,fp8_dense_tflops", [
    # NVIDIA datasheets print 2:4-sparsity figures with an asterisk; dense is half of them.
    ("h100-sxm", 80, 3.35, 1979 / 2, 3958 / 2),
    ("h200", 141, 4.8, 1979 / 2, 3958 / 2),
    ("b200", 180, 7.7, 4500 / 2, 9000 / 2),      # HGX B200 per GPU
    ("l40s", 48, 0.864, 362.05, 733),            # the L40S datasheet prints the dense figures itself
    ("gh200", 96, 4.0, 1979 / 2, 3958 / 2),
])
def test_gpu_figures_are_dense_not_sparse(name, hbm_gb, hbm_tbps, bf16_dense_tflops, fp8_dense_tflops):
    g = get_gpu(name)
    assert g.hbm_bytes == hbm_gb * 10**9
    assert g.hbm_bps == pytest.approx(hbm_tbps * 1e12)
    assert g.bf16_flops == pytest.approx(bf16_dense_tflops * 1e12, rel=1e-3)
    assert g.fp8_flops == pytest.approx(fp8_dense_tflops * 1e12, rel=1e-3)


def test_a100_has_no_fp8():
    a100 = get_gpu("a100-80gb")
    assert a100.fp8_flops is None
    assert a100.bf16_flops == 312e12 and a100.hbm_bps == pytest.approx(2.039e12)
    assert a100.peak_flops("bf16") == 312e12
    with pytest.raises(ValueError, match="no FP8"):
        a100.peak_flops("fp8")
    with pytest.raises(ValueError, match="unknown compute dtype"):
        a100.peak_flops("int3")


def test_links_effective_below_theoretical():
    # PCIe per direction: GT/s x 16 lanes x 128/130 encoding / 8 bits.
    gen4_theory = 16e9 * 16 * 128 / 130 / 8   # 31.5 GB/s
    gen5_theory = 32e9 * 16 * 128 / 130 / 8   # 63.0 GB/s
    assert 0.7 * gen4_theory <= get_link("pcie-gen4-x16").bandwidth_bps < gen4_theory
    assert 0.7 * gen5_theory <= get_link("pcie-gen5-x16").bandwidth_bps < gen5_theory
    assert get_link("nvlink-c2c").bandwidth_bps < 450e9           # 900 GB/s total = 450 per direction
    assert get_link("rdma-400g").bandwidth_bps < 400e9 / 8        # 50 GB/s line rate
    assert get_link("rdma-200g").bandwidth_bps < 200e9 / 8
    nvme = get_link("nvme-gen4")
    assert nvme.io_size_bytes == 4096 and nvme.iops_bps == pytest.approx(1.5e6 * 4096)  # 6.144 GB/s


def test_transfer_time_with_setup_and_iops():
    pcie = get_link("pcie-gen5-x16")
    assert pcie.transfer_s(100 * 10**6) == pytest.approx(10e-6 + 100e6 / 50e9)  # 10 us + 2 ms
    nvme = get_link("nvme-gen4")
    # 1000 x 4 KiB: bandwidth 4.096e6/7e9 = 585 us < IOPS 1000/1.5e6 = 667 us -> IOPS bound
    assert nvme.transfer_s(4096 * 1000, io_size_bytes=4096) == pytest.approx(100e-6 + 1000 / 1.5e6)
    assert nvme.transfer_s(4096 * 1000) == pytest.approx(100e-6 + 4.096e6 / 7e9)
    with pytest.raises(ValueError):
        pcie.transfer_s(-1)


def test_lookup_errors_list_known_names_and_aliases():
    assert get_gpu("H100_SXM") is get_gpu("h100-sxm") is get_gpu("h100")
    with pytest.raises(ValueError, match="valid: h100-sxm, h200"):
        get_gpu("h900")
    with pytest.raises(ValueError, match="valid: pcie-gen4-x16"):
        get_link("carrier-pigeon")


@pytest.mark.parametrize("bare,suffixed,canonical", [("h100", "h100-sxm", "h100-sxm"), ("h200", "h200-sxm", "h200"),
                                                       ("b200", "b200-sxm", "b200")])
def test_sxm_parts_answer_to_both_names_and_print_one(bare, suffixed, canonical, tmp_path):
    # H100 SXM5, H200 (SXM) and HGX B200 are SXM parts; `--gpu h200-sxm` was unknown while
    # `--gpu h100` worked. Both spellings give the one preset, printed under its canonical name.
    assert get_gpu(bare) is get_gpu(suffixed) is get_gpu(canonical)
    assert get_gpu(suffixed).name == canonical
    # a hardware file's section under either name overrides the preset (no second entry under the alias)
    f = tmp_path / "hw.toml"
    f.write_text(f'[gpu.{suffixed if canonical == bare else bare}]\nhbm_bps = "1TB/s"\n')
    table = load_hardware_file(f)
    assert get_gpu(canonical, table).hbm_bps == 1e12 and set(table.gpus) == set(GPU_NAMES)


def test_unknown_gpu_lists_the_aliases():
    with pytest.raises(ValueError) as err:
        get_gpu("h300-sxm")
    # the nearest (pcs.choices.did_you_mean): h200-sxm and h100-sxm 14/16 = 0.875 (a tie, difflib's order), b200-sxm 0.75
    assert str(err.value) == ("unknown GPU 'h300-sxm'; did you mean one of: 'h200-sxm', 'h100-sxm', 'b200-sxm'? "
                              "valid: h100-sxm, h200, b200, a100-80gb, l40s, gh200 "
                              "(aliases h100 = h100-sxm; h200-sxm = h200; b200-sxm = b200; a100 = a100-80gb)")


def test_replay_prints_the_canonical_gpu_name():
    from click.testing import CliRunner

    from pcs.cli.main import cli

    out = CliRunner().invoke(cli, ["replay", "--quiet", "--gpu", "h200-sxm", "--model", "llama-3.1-8b", "--tp", "1",
                                   "--timing", "sequential", "--format", "json"]).output
    assert '"gpu": "h200"' in out
    listing = CliRunner().invoke(cli, ["hardware"]).output
    assert "note: also accepted: h100 = h100-sxm, h200-sxm = h200, b200-sxm = b200, a100 = a100-80gb" in listing


def test_default_link_for_tier():
    for tier in ("cpu", "host", "dram"):
        assert default_link_for_tier(tier).name == "pcie-gen5-x16"
    for tier in ("ssd", "nvme"):
        assert default_link_for_tier(tier).name == "nvme-gen4"
    assert default_link_for_tier("remote").name == "rdma-400g"
    with pytest.raises(ValueError, match="known tiers"):
        default_link_for_tier("tape")


def test_override_parses_units_and_records_source():
    g = override(get_gpu("h100-sxm"), hbm_bps="3TB/s", hbm_bytes="96GiB", bf16_flops="900e12")
    assert (g.hbm_bps, g.hbm_bytes, g.bf16_flops) == (3e12, 96 * 2**30, 900e12)
    assert "overridden" in g.source and "hbm_bps" in g.source
    link = override(LINKS["pcie-gen5-x16"], setup_s="15us", bandwidth_bps="45GB/s")
    assert (link.setup_s, link.bandwidth_bps) == (pytest.approx(15e-6), 45e9)
    assert override(g) is g
    with pytest.raises(ValueError, match="unknown GPUSpec field"):
        override(g, hbm="1GB")
    with pytest.raises(ValueError, match="hbm_bps"):
        override(g, hbm_bps="-3TB/s")
    with pytest.raises(ValueError, match="plain number"):
        override(g, bf16_flops="lots")


def test_spec_validation():
    with pytest.raises(ValueError):
        GPUSpec("x", 0, 1.0, 1.0, None, "")
    with pytest.raises(ValueError):
        LinkSpec("x", 1.0, 0.0, 1e6, None, "")   # iops without io size
    with pytest.raises(ValueError):
        LinkSpec("x", 0.0, 0.0, None, None, "")


def test_load_hardware_file_toml_and_json(tmp_path):
    toml = tmp_path / "hw.toml"
    toml.write_text('[gpu.h100-sxm]\nhbm_bps = "3.0TB/s"\n'
                    '[gpu.my-gpu]\nhbm_bytes = "96GB"\nhbm_bps = "4TB/s"\nbf16_flops = 1e15\n'
                    '[link.pcie-gen5-x16]\nbandwidth_bps = "45GB/s"\nsetup_s = "15us"\n')
    t = load_hardware_file(toml)
    assert get_gpu("h100-sxm", t).hbm_bps == 3e12
    assert get_gpu("h100-sxm").hbm_bps == 3.35e12               # presets untouched
    mine = get_gpu("my-gpu", t)
    assert (mine.hbm_bytes, mine.fp8_flops) == (96 * 10**9, None)
    assert default_link_for_tier("cpu", t).bandwidth_bps == 45e9
    js = tmp_path / "hw.json"
    js.write_text(json.dumps({"links": {"my-nic": {"bandwidth_bps": "10GB/s", "setup_s": "1us",
                                                   "iops": 1e6, "io_size_bytes": "4KiB"}}}))
    nic = get_link("my-nic", load_hardware_file(js))
    assert (nic.bandwidth_bps, nic.iops_bps) == (10e9, 1e6 * 4096)


@pytest.mark.parametrize("text,field", [
    ('[gpu.my-gpu]\nhbm_bytes = "96GB"\n', "gpu.my-gpu"),                 # missing fields
    ('[gpu.h100-sxm]\nhbm_bps = "3XB/s"\n', "gpu.h100-sxm.hbm_bps"),      # bad unit: the field itself
    ('[link.pcie-gen5-x16]\nspeed = "1GB/s"\n', "link.pcie-gen5-x16.speed"),  # unknown field
    ('[cpu.x]\na = 1\n', "cpu"),                                           # unknown section
    # one entry twice: under gpu and gpus, or by its name and its alias (ALIASES: h100 -> h100-sxm,
    # nvme -> nvme-gen4); before, the later one silently won (1.0 TB/s here)
    ('[gpu.h100-sxm]\nhbm_bps = "3.0TB/s"\n[gpus.h100-sxm]\nhbm_bps = "1.0TB/s"\n', "gpus.h100-sxm"),
    ('[gpu.h100-sxm]\nhbm_bps = "3.0TB/s"\n[gpu.h100]\nhbm_bps = "1.0TB/s"\n', "gpu.h100"),
    ('[link.nvme-gen4]\nsetup_s = "1us"\n[links.nvme]\nsetup_s = "2us"\n', "links.nvme"),
])
def test_load_hardware_file_errors_name_file_and_field(tmp_path, text, field):
    assert_file_error_names(tmp_path, "hw.toml", text, load_hardware_file, field)


# A hardware file's new entry named close to a preset (Review 44c): with fields missing the error names the nearest
# presets; complete, it is kept (a user's own part) with a note at its line. Ratios by difflib's rule (>= 0.6).

def test_an_incomplete_entry_near_a_gpu_preset_names_it(tmp_path):
    # h100sxm / h100-sxm: 7 matching of 7 + 8 -> 0.93; h200-sxm (the alias of h200) 'h', '00', 'sxm' = 6 -> 0.8
    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu.h100sxm]\nhbm_bps = "3.0TB/s"\n')
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert ("hw.toml:1: field 'gpu.h100sxm': new entry needs fields hbm_bytes, bf16_flops (did you mean one of: "
            "'h100-sxm', 'h200-sxm'" in str(err.value))


def test_an_incomplete_entry_near_a_link_preset_names_it(tmp_path):
    # pcie-gen5x16 / pcie-gen5-x16: 12 of 12 + 13 -> 0.96; pcie-gen4-x16 'pcie-gen' + 'x16' = 11 -> 0.88
    hw = tmp_path / "hw.toml"
    hw.write_text('# mine\n[link.pcie-gen5x16]\nbandwidth_bps = "45GB/s"\n')
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert ("hw.toml:2: field 'link.pcie-gen5x16': new entry needs fields setup_s (did you mean one of: "
            "'pcie-gen5-x16', 'pcie-gen4-x16'? " in str(err.value))


def test_an_incomplete_entry_near_nothing_keeps_its_message(tmp_path):
    hw = tmp_path / "hw.toml"
    hw.write_text('[link.zzz]\nbandwidth_bps = "45GB/s"\n')
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert str(err.value).endswith("new entry needs fields setup_s")


def test_a_complete_entry_near_a_preset_is_kept_with_a_note(tmp_path):
    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu.my-gpu]\nhbm_bytes = "96GB"\nhbm_bps = "4TB/s"\nbf16_flops = 989.4e12\n\n'
                  '[link.pcie-gen5x16]\nbandwidth_bps = "45GB/s"\nsetup_s = "15us"\n'
                  '[gpu.h100sxm]\nhbm_bytes = "80GB"\nhbm_bps = "3TB/s"\nbf16_flops = 989.4e12\n')
    table = load_hardware_file(hw)
    assert table.links["pcie-gen5x16"].bandwidth_bps == 45e9                     # the new entry, as written
    assert table.links["pcie-gen5-x16"] == get_link("pcie-gen5-x16")             # the preset unchanged
    assert table.gpus["h100-sxm"] == get_gpu("h100-sxm")
    # my-gpu is near no preset (my-gpu / gh200: 'g' -> 2/11): no note; the two others at their header lines, by
    # section (TOML gathers [gpu.*] into one table, written first) then entry
    assert [n.split(" is a new ")[0] for n in table.notes] == [f"{hw}:9: gpu.h100sxm", f"{hw}:6: link.pcie-gen5x16"]
    assert table.notes[1].endswith("new link entry, not a change to a preset (did you mean 'pcie-gen5-x16'? a "
                                   "preset's name changes that preset)")


def test_the_note_reaches_the_command_line_and_the_replay_json(tmp_path):
    from helpers import SMALL_TRACE, invoke

    hw = tmp_path / "hw.toml"
    # gem / gen: one letter replaced (mend46a: nvme-gen44 was the example; another number is no typo now)
    hw.write_text('[link.nvme-gem4]\nbandwidth_bps = "5GB/s"\nsetup_s = "50us"\n')
    r = invoke("hardware", "--hardware-file", hw, "--link", "nvme-gem4")
    assert r.exit_code == 0 and f"pcs: note: {hw}:1: link.nvme-gem4 is a new link entry" in r.stderr, r.output
    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=100blocks", "--hardware-file", hw, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    assert any(n.startswith(f"{hw}:1: link.nvme-gem4 is a new link entry") for n in json.loads(r.stdout)["notes"])


# Review 45 (mend45b): a figure out of its bounds is named at the line of its own field (it was the entry's header
# line); a value that is the entry's as a whole (fields missing) stays at the header.

@pytest.mark.parametrize("text, where", [
    # TOML: header on line 2, the bad field on line 4 (0 GB/s is not > 0)
    ('# mine\n[links.pcie-gen5-x16]\nsetup_s = "15us"\nbandwidth_bps = "0GB/s"\n',
     "4: field 'links.pcie-gen5-x16.bandwidth_bps': must be a finite number > 0, got 0.0"),
    # a new entry: 1e25 FLOP/s is over the 1e21 bound; bf16_flops is on line 4
    ('[gpu.my-gpu]\nhbm_bytes = "96GB"\nhbm_bps = "4TB/s"\nbf16_flops = 1e25\nfp8_flops = 1978.9e12\n',
     "4: field 'gpu.my-gpu.bf16_flops': must be between 1e+09 and 1e+21 FLOP/s"),
    # 0 GB of HBM: an int > 0 is needed; line 3
    ('[gpu.h100-sxm]\nhbm_bps = "3TB/s"\nhbm_bytes = "0GB"\n', "3: field 'gpu.h100-sxm.hbm_bytes': must be an int > 0"),
    # 0.5 IOPS is under 1 operation/s; line 3
    ('[link.nvme-gen4]\nsetup_s = "15us"\niops = 0.5\n', "3: field 'link.nvme-gen4.iops': must be at least 1 "
     "operations/s"),
])
def test_a_figure_out_of_bounds_is_named_at_its_own_line(tmp_path, text, where):
    hw = tmp_path / "hw.toml"
    hw.write_text(text)
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert str(err.value).startswith(f"{hw}:{where}"), str(err.value)


def test_a_json_figure_out_of_bounds_is_named_at_its_own_line(tmp_path):
    hw = tmp_path / "hw.json"
    hw.write_text('{"gpu": {"h100-sxm":\n   {"hbm_bps": "3TB/s",\n    "bf16_flops": 1}}}\n')   # 1 FLOP/s < 1e9
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert str(err.value).startswith(f"{hw}:3: field 'gpu.h100-sxm.bf16_flops': must be between 1e+09"), str(err.value)


def test_a_figure_out_of_bounds_under_an_alias_names_the_preset(tmp_path):
    # review 45d: [gpu.h100] is the preset h100-sxm (an alias): the error at the field's line lost that name
    hw = tmp_path / "hw.toml"
    hw.write_text("[gpu.h100]\nbf16_flops = 5\n")
    with pytest.raises(ValueError) as err:
        load_hardware_file(hw)
    assert str(err.value).startswith(f"{hw}:2: field 'gpu.h100.bf16_flops': preset h100-sxm: must be between 1e+09")


# Review 45 (mend45b): the note "a new entry, not a change to a preset" only where a typo is likely (rule:
# pcs.hardware.likely_typo_of); real, different parts within difflib's 0.6 of a preset get none.

_GPU_FIELDS = 'hbm_bytes = "40GB"\nhbm_bps = "1.5TB/s"\nbf16_flops = 312e12\n'
_LINK_FIELDS = 'bandwidth_bps = "11GB/s"\nsetup_s = "20us"\n'


@pytest.mark.parametrize("section, name", [
    ("gpu", "a100-40gb"),      # 40 / 80: another number of the same length (A100 40GB is a real part)
    ("gpu", "l40"),            # l, 40 / l, 40, s: a run fewer (L40 and L40S are two parts)
    ("gpu", "b100"),           # 100 / 200 of b200: another number of the same length
    ("gpu", "h100-custom"),    # custom / sxm: more than one edit; h100 (alias): a run more
    ("link", "rdma-100g"),     # 100 / 200 of rdma-200g: another number of the same length
    ("gpu", "a10"),            # one digit from the alias a100 only: aliases count only when equal (A10 is a part)
    # review 45d: gb / b (b200) and gb / gh (gh200) differ in a part number's letter code: GB200 is another part
    ("gpu", "gb200"),
    ("gpu", "h100-sxm55"),     # two digits after the preset's name: not one generation digit
    ("gpu", "h10-sxm"),        # mend46a L5: 10 / 100, a digit dropped: another number, not a typo
])
def test_a_real_part_near_a_preset_gets_no_note(tmp_path, section, name):
    hw = tmp_path / "hw.toml"
    hw.write_text(f'[{section}."{name}"]\n' + (_GPU_FIELDS if section == "gpu" else _LINK_FIELDS))
    table = load_hardware_file(hw)
    assert table.notes == ()
    assert name in (table.gpus if section == "gpu" else table.links)       # kept as a new entry


@pytest.mark.parametrize("name, preset", [
    ("H100 SXM", "h100-sxm"),   # only case and a space differ
    ("h100.sxm", "h100-sxm"),   # punctuation
    ("H200 SXM", "h200"),       # equal to an alias (h200-sxm) but for case and a space: its preset
    ("h100-sxn", "h100-sxm"),   # sxn / sxm: one letter replaced
    ("h100-smx", "h100-sxm"),   # two neighbours swapped
    # review 45d
    ("B 200", "b200"),          # equal to b200 but for case and a space; one letter from h200 too: exact wins
    ("h100-sxm5", "h100-sxm"),  # the preset's full name and a generation digit: H100 SXM5 is that part
])
def test_a_likely_typo_of_a_preset_gets_the_note(tmp_path, name, preset):
    hw = tmp_path / "hw.toml"
    hw.write_text(f'\n[gpu."{name}"]\n{_GPU_FIELDS}')
    table = load_hardware_file(hw)
    assert table.notes == (f"{hw}:2: gpu.{name} is a new gpu entry, not a change to a preset (did you mean "
                           f"'{preset}'? a preset's name changes that preset)",)


@pytest.mark.parametrize("name, preset", [
    ("nvlinkc2c", "nvlink-c2c"),      # review 45d: a separator dropped merges runs (nvlinkc / nvlink, c)
    ("pciegen5x16", "pcie-gen5-x16"),
    ("nvmegen4", "nvme-gen4"),
    ("pcie-gem5-x16", "pcie-gen5-x16"),   # gem / gen: one letter of a word, not of a part's letter code
])
def test_a_link_typo_gets_the_note(tmp_path, name, preset):
    hw = tmp_path / "hw.toml"
    hw.write_text(f'\n[link."{name}"]\n{_LINK_FIELDS}')
    table = load_hardware_file(hw)
    assert table.notes == (f"{hw}:2: link.{name} is a new link entry, not a change to a preset (did you mean "
                           f"'{preset}'? a preset's name changes that preset)",)


def test_figure_error_keeps_its_field():
    # the API's message is unchanged ("NAME: FIELD PROBLEM"); the field is kept for a file's line
    with pytest.raises(ValueError) as err:
        LinkSpec("x", 0.0, 0.0, None, None, "s")
    assert str(err.value) == "x: bandwidth_bps must be a finite number > 0, got 0.0"
    assert err.value.field_name == "bandwidth_bps"
