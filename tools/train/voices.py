"""The TTS voice inventory, its split into train / dev-unseen / test-unseen voices, random
speaking parameters, and synthesis with espeak-ng, flite and festival.

A voice id names one synthetic speaker:
  espeak:<accent>[+<variant>]   eSpeak NG English accent with an optional voice variant; variants
                                are the shipped ones (!v/...) and `sluice_gNNN`, procedurally
                                generated variants (formant scaling ~ vocal tract length, pitch
                                base/range, flutter, roughness, breathiness, Klatt source, tone),
                                written to <out>/espeak/espeak-ng-data/voices/!v/.
  flite:<voice>                 kal (8 kHz diphone), kal16, awb, rms, slt
  festival:<voice>              kal_diphone, ked_diphone, cmu_us_slt_arctic_hts
  rhvoice:<voice>               RHVoice (non-free): alan, bdl, clb, slt, ... (recorded speakers)
  pico:<lang>                   SVOX pico (non-free): en-US, en-GB
  mbrola:<voice>                MBROLA diphones through espeak-ng's mb-<voice>: us1, us2, us3, en1
Every engine but espeak-ng is built from recordings of a human speaker.
Unseen-voice hold-out: a voice is 'test' or 'dev' when its engine voice, its espeak accent or its
espeak variant is held out for that split; such voices are never used in train.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess

ESPEAK_SYS_DATA = "/usr/lib/x86_64-linux-gnu/espeak-ng-data"
# accent name (used in voice ids) -> voice file under lang/. The file path must be given to -v:
# with a bare language name ('en-gb') eSpeak NG silently drops the +variant.
ESPEAK_ACCENTS = {"en-us": "gmw/en-US", "en": "gmw/en", "en-gb-scotland": "gmw/en-GB-scotland",
                  "en-gb-x-gbclan": "gmw/en-GB-x-gbclan", "en-gb-x-rp": "gmw/en-GB-x-rp",
                  "en-gb-x-gbcwmd": "gmw/en-GB-x-gbcwmd", "en-029": "gmw/en-029",
                  "en-us-nyc": "gmw/en-US-nyc"}
# eSpeak NG indexes at most 349 voices + variants; past that, voices silently vanish. So the
# generated variants are spread over several private data dirs of this many each.
VARIANTS_PER_DATA_DIR = 150
# Shipped variants held out (file names under !v). Chosen to cover male, female, klatt,
# and 'character' voices on both sides.
TEST_VARIANTS = {"klatt4", "f4", "m6", "Andrea", "Gene2", "iven3", "steph3", "robert", "travis",
                 "Michael", "norbert", "aunty", "edward2"}
DEV_VARIANTS = {"klatt5", "f5", "m7", "Alicia", "iven2", "steph2", "quincy", "Mike", "marcelo"}
SKIP_VARIANTS = {"fast"}            # a speed test, not a voice
TEST_ACCENTS = {"en-us-nyc"}
DEV_ACCENTS: set[str] = set()
N_GENERATED = 300                   # sluice_g000..: index % 10 == 0 -> test, == 1 -> dev
VOICE_GEN_SALT = "sluice-espeak-variants-v1"

FLITE_VOICES = {"kal": "train", "kal16": "train", "awb": "train", "slt": "train", "rms": "test"}
FLITE_F0 = {"kal": 95.0, "kal16": 95.0, "awb": 130.0, "slt": 175.0, "rms": 104.0}
FESTIVAL_VOICES = {"kal_diphone": "train", "cmu_us_slt_arctic_hts": "train",
                   "ked_diphone": "test"}
FESTIVAL_F0 = {"kal_diphone": 105.0, "ked_diphone": 105.0}
# Recording-based voices of the non-free / contrib packages (tools/setup.sh --train). One speaker
# of each engine is held out whole for the unseen-voice test sets. slt recurs in flite/festival
# (train there too), so the held-out RHVoice speaker is clb, whom no other engine has.
RHVOICE_VOICES = {"alan": "train", "bdl": "train", "slt": "train", "evgeniy-eng": "train",
                  "lyubov": "train", "clb": "test"}
RHVOICE_DIR = "/usr/share/RHVoice/voices"
# Voice data under a non-commercial licence (CC BY-NC-ND 4.0, /usr/share/doc/rhvoice-english/
# copyright); make_data.py --commercial-only leaves them out.
NONCOMMERCIAL_VOICES = {"rhvoice:evgeniy-eng", "rhvoice:lyubov"}
PICO_VOICES = {"en-US": "train", "en-GB": "test"}
MBROLA_VOICES = {"us1": "train", "us3": "train", "en1": "train", "us2": "test"}
MBROLA_DIR = "/usr/share/mbrola"


def generated_variant_names() -> list[str]:
    return [f"sluice_g{i:03d}" for i in range(N_GENERATED)]


def _generated_split(name: str) -> str:
    i = int(name[len("sluice_g"):])
    return {0: "test", 1: "dev"}.get(i % 10, "train")


def generated_variant_text(name: str) -> str:
    """The variant file for one generated espeak voice (fixed: independent of --seed)."""
    rng = random.Random(f"{VOICE_GEN_SALT}/{name}")
    female = rng.random() < 0.5
    vtl = rng.uniform(1.02, 1.22) if female else rng.uniform(0.86, 1.04)
    base = rng.uniform(150, 240) if female else rng.uniform(62, 125)
    if rng.random() < 0.08:          # child-like / very high voice
        vtl, base = rng.uniform(1.18, 1.3), rng.uniform(230, 300)
    top = base * rng.uniform(1.15, 1.9)
    lines = ["language variant", f"name {name}", "gender " + ("female" if female else "male"),
             f"pitch {int(base)} {int(top)}"]
    lines.append(f"formant 0 {int(100 * rng.uniform(0.9, 1.1))} {int(rng.uniform(60, 160))} "
                 f"{int(rng.uniform(70, 150))}")
    for k in range(1, 9):
        freq = 100 * vtl * rng.uniform(0.96, 1.04)
        strength = rng.uniform(70, 135) if k <= 5 else rng.uniform(40, 130)
        width = rng.uniform(70, 150)
        lines.append(f"formant {k} {int(freq)} {int(strength)} {int(width)}")
    lines.append(f"flutter {int(min(rng.expovariate(1 / 8), 40))}")
    lines.append(f"roughness {rng.choice([0, 0, 0, 1, 2, 3, 4])}")
    lines.append(f"voicing {int(rng.uniform(75, 115))}")
    lines.append(f"consonants {int(rng.uniform(60, 130))} {int(rng.uniform(60, 130))}")
    if rng.random() < 0.5:
        lines.append(f"tone 600 {int(rng.uniform(120, 230))} 1200 {int(rng.uniform(100, 180))} "
                     f"2000 {int(rng.uniform(60, 160))}")
    if rng.random() < 0.15:
        b = [int(rng.uniform(0, 60) * (0.8 ** k)) for k in range(6)]
        lines.append("breath " + " ".join(map(str, b)))
    if rng.random() < 0.35:
        lines.append(f"klatt {rng.randint(1, 6)}")
    if rng.random() < 0.05:
        lines.append(f"echo {rng.randint(15, 60)} {rng.randint(5, 20)}")
    return "\n".join(lines) + "\n"


def shipped_variants() -> list[str]:
    vdir = os.path.join(ESPEAK_SYS_DATA, "voices", "!v")
    return sorted(v for v in os.listdir(vdir)
                  if " " not in v and v not in SKIP_VARIANTS and not v.startswith("sluice_"))


def _link(src: str, dst: str) -> None:
    if not os.path.lexists(dst):
        os.symlink(src, dst)


def espeak_data_index(variant: str | None) -> int:
    """Which private data dir (<root>/rN) holds a variant."""
    if variant and variant.startswith("sluice_g"):
        return int(variant[len("sluice_g"):]) // VARIANTS_PER_DATA_DIR
    return 0


def prepare_espeak_data(root: str) -> str:
    """Private espeak-ng data dirs <root>/rN/espeak-ng-data: the system files linked, lang/ cut
    down to the English voices, every shipped variant plus one slice of the generated ones.
    Idempotent; returns root."""
    names = generated_variant_names()
    n_dirs = max(1, -(-len(names) // VARIANTS_PER_DATA_DIR))
    for d in range(n_dirs):
        data = os.path.join(root, f"r{d}", "espeak-ng-data")
        vdir = os.path.join(data, "voices", "!v")
        gdir = os.path.join(data, "lang", "gmw")
        os.makedirs(vdir, exist_ok=True)
        os.makedirs(gdir, exist_ok=True)
        for entry in os.listdir(ESPEAK_SYS_DATA):
            if entry not in ("voices", "lang"):
                _link(os.path.join(ESPEAK_SYS_DATA, entry), os.path.join(data, entry))
        for f in ESPEAK_ACCENTS.values():
            _link(os.path.join(ESPEAK_SYS_DATA, "lang", f), os.path.join(data, "lang", f))
        for v in shipped_variants():
            _link(os.path.join(ESPEAK_SYS_DATA, "voices", "!v", v), os.path.join(vdir, v))
        for name in names:
            if espeak_data_index(name) != d:
                continue
            path = os.path.join(vdir, name)
            text = generated_variant_text(name)
            if not os.path.exists(path) or open(path).read() != text:
                with open(path + ".tmp", "w") as f:
                    f.write(text)
                os.replace(path + ".tmp", path)
    return root


def verify_espeak_voices(root: str, workdir: str) -> list[str]:
    """Every accent and variant must change the sound (eSpeak NG ignores what it cannot find).
    Returns the names that did not; an empty list when all is well."""
    os.makedirs(workdir, exist_ok=True)
    text = "hello, this is a voice check."

    def digest(voice_arg: str, d: int) -> bytes | None:
        out = os.path.join(workdir, "check.wav")
        if os.path.exists(out):
            os.remove(out)
        if not _run(["espeak-ng", f"--path={os.path.join(root, f'r{d}')}", "-v", voice_arg,
                     "-w", out, text]) or not os.path.exists(out):
            return None
        with open(out, "rb") as f:
            return f.read()

    bad, seen = [], {}
    for accent, f in ESPEAK_ACCENTS.items():
        h = digest(f, 0)
        if h is None or h in seen.values():
            bad.append(accent)
        seen[accent] = h
    base = seen.get("en-us")
    for v in shipped_variants() + generated_variant_names():
        h = digest(ESPEAK_ACCENTS["en-us"] + "+" + v, espeak_data_index(v))
        if h is None or h == base:
            bad.append(v)
    return bad


def espeak_args(root: str, voice: str) -> list[str]:
    name = voice.split(":", 1)[1]
    accent, _, variant = name.partition("+")
    d = espeak_data_index(variant or None)
    return [f"--path={os.path.join(root, f'r{d}')}", "-v",
            ESPEAK_ACCENTS[accent] + ("+" + variant if variant else "")]


def variant_split(v: str | None) -> str:
    if v is None:
        return "train"
    if v.startswith("sluice_g"):
        return _generated_split(v)
    if v in TEST_VARIANTS:
        return "test"
    if v in DEV_VARIANTS:
        return "dev"
    return "train"


def voice_split(voice: str) -> str:
    """'train', 'dev' or 'test' for a voice id ('test' wins over 'dev')."""
    engine, name = voice.split(":", 1)
    if engine == "flite":
        return FLITE_VOICES[name]
    if engine == "festival":
        return FESTIVAL_VOICES[name]
    if engine == "rhvoice":
        return RHVOICE_VOICES[name]
    if engine == "pico":
        return PICO_VOICES[name]
    if engine == "mbrola":
        return MBROLA_VOICES[name]
    accent, _, variant = name.partition("+")
    parts = {variant_split(variant or None),
             "test" if accent in TEST_ACCENTS else "dev" if accent in DEV_ACCENTS else "train"}
    return "test" if "test" in parts else "dev" if "dev" in parts else "train"


# Engine shares per hold-out class. "formant" is the mix of the first default model (mostly
# espeak-ng formant voices); "human" builds around voices recorded from people and keeps the
# formant voices a small share (they sound least human of all: see shared/DATA-SOURCES.md).
MIXES = {
    "formant": {"train": {"espeak": 0.6, "flite": 0.25, "festival": 0.15},
                "dev": {"espeak": 1.0},
                "test": {"espeak": 0.5, "flite": 0.25, "festival": 0.25}},
    "human": {"train": {"espeak": 0.1, "rhvoice": 0.3, "mbrola": 0.15, "pico": 0.1, "flite": 0.2,
                        "festival": 0.15},
              "dev": {"espeak": 1.0},
              "test": {"rhvoice": 0.25, "mbrola": 0.2, "pico": 0.2, "flite": 0.2, "festival": 0.15}},
}


def rhvoice_available() -> list[str]:
    if shutil.which("RHVoice-test") is None or not os.path.isdir(RHVOICE_DIR):
        return []
    return sorted(v for v in os.listdir(RHVOICE_DIR) if v in RHVOICE_VOICES)


def pico_available() -> list[str]:
    return list(PICO_VOICES) if shutil.which("pico2wave") else []


def mbrola_available() -> list[str]:
    if shutil.which("mbrola") is None:
        return []
    return [v for v in MBROLA_VOICES if os.path.exists(os.path.join(MBROLA_DIR, v, v))]


class Inventory:
    """All voices of one hold-out class, with sampling weights by engine."""

    ENGINE_WEIGHTS = MIXES["formant"]

    def __init__(self, voice_class: str, flite_available: list[str], festival_ok: bool,
                 mix: str = "formant", commercial_only: bool = False):
        self.voice_class = voice_class
        variants = shipped_variants() + generated_variant_names()
        self.accents = list(ESPEAK_ACCENTS)
        self.variants = variants
        self.flite = [v for v, s in FLITE_VOICES.items() if s == voice_class and v in flite_available]
        self.festival = [v for v, s in FESTIVAL_VOICES.items() if s == voice_class] if festival_ok else []
        self.recorded = {
            "rhvoice": [v for v in rhvoice_available() if RHVOICE_VOICES[v] == voice_class],
            "pico": [v for v in pico_available() if PICO_VOICES[v] == voice_class],
            "mbrola": [v for v in mbrola_available() if MBROLA_VOICES[v] == voice_class],
        }
        if commercial_only:
            self.recorded = {e: [v for v in names if f"{e}:{v}" not in NONCOMMERCIAL_VOICES]
                             for e, names in self.recorded.items()}
        weights = dict(MIXES[mix][voice_class])
        if not self.flite:
            weights.pop("flite", None)
        if not self.festival:
            weights.pop("festival", None)
        for engine, names in self.recorded.items():
            if not names:
                weights.pop(engine, None)
        if not weights:
            raise RuntimeError(f"no voice installed for the {voice_class} class of mix {mix}")
        self.engines = sorted(weights)
        self.weights = [weights[e] for e in self.engines]

    def espeak_voices(self) -> list[str]:
        out = []
        for a in self.accents:
            for v in [None] + self.variants:
                vid = "espeak:" + a + ("+" + v if v else "")
                if voice_split(vid) == self.voice_class:
                    out.append(vid)
        return out

    def all_voices(self) -> list[str]:
        return (self.espeak_voices() + ["flite:" + v for v in self.flite]
                + ["festival:" + v for v in self.festival]
                + [e + ":" + v for e, names in sorted(self.recorded.items()) for v in names])

    def draw(self, rng: random.Random) -> str:
        engine = rng.choices(self.engines, self.weights)[0]
        if engine == "flite":
            return "flite:" + rng.choice(self.flite)
        if engine == "festival":
            return "festival:" + rng.choice(self.festival)
        if engine in self.recorded:
            return engine + ":" + rng.choice(self.recorded[engine])
        for _ in range(10000):
            accent = rng.choice(self.accents)
            r = rng.random()
            if r < 0.08:
                variant = None
            elif r < 0.5:
                variant = rng.choice(shipped_variants())
            else:
                variant = rng.choice(generated_variant_names())
            vid = "espeak:" + accent + ("+" + variant if variant else "")
            if voice_split(vid) == self.voice_class:
                return vid
        raise RuntimeError("no espeak voice for " + self.voice_class)


def draw_tts_params(voice: str, rng: random.Random) -> dict:
    """Speaking rate and pitch for one utterance (engine-specific units, recorded as drawn)."""
    engine, name = voice.split(":", 1)
    if engine == "espeak":
        return {"wpm": rng.randint(125, 215), "pitch": rng.randint(10, 90),
                "word_gap": rng.choice([0, 0, 0, 0, 1, 2, 3])}
    if engine == "flite":
        return {"stretch": round(rng.uniform(0.8, 1.3), 3),
                "f0_mean": round(FLITE_F0[name] * rng.uniform(0.75, 1.35), 1),
                "f0_std_scale": round(rng.uniform(0.5, 1.8), 2)}
    if engine == "rhvoice":
        return {"rate": rng.randint(-25, 35), "pitch": rng.randint(-25, 25)}
    if engine == "pico":
        return {"tempo": round(rng.uniform(0.85, 1.2), 3), "pitch_cents": rng.randint(-200, 200)}
    if engine == "mbrola":
        return {"wpm": rng.randint(130, 200), "pitch": rng.randint(25, 75)}
    if name == "cmu_us_slt_arctic_hts":
        return {"speed": round(rng.uniform(0.8, 1.25), 3)}
    return {"stretch": round(rng.uniform(0.85, 1.4), 3),
            "f0_mean": round(FESTIVAL_F0[name] * rng.uniform(0.75, 1.4), 1),
            "f0_std": round(rng.uniform(8, 30), 1)}


def flite_voices_available() -> list[str]:
    try:
        out = subprocess.run(["flite", "-lv"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return out.split(":", 1)[-1].split()


def festival_available() -> bool:
    return shutil.which("text2wave") is not None and shutil.which("festival") is not None


# ---------------------------------------------------------------- synthesis

def _run(cmd: list[str], timeout: float = 120) -> bool:
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def synth_espeak(espeak_root: str, voice: str, params: dict, text: str, out: str) -> bool:
    return _run(["espeak-ng"] + espeak_args(espeak_root, voice) + ["-s", str(params["wpm"]),
                 "-p", str(params["pitch"]), "-g", str(params["word_gap"]), "-w", out, text])


def synth_flite(voice: str, params: dict, text: str, out: str) -> bool:
    name = voice.split(":", 1)[1]
    std = 0.1 * FLITE_F0[name] * params["f0_std_scale"]
    return _run(["flite", "-voice", name, "--setf", f"duration_stretch={params['stretch']}",
                 "--setf", f"int_f0_target_mean={params['f0_mean']}",
                 "--setf", f"int_f0_target_stddev={std:.1f}", "-t", text, "-o", out])


def synth_rhvoice(voice: str, params: dict, text: str, out: str) -> bool:
    """RHVoice-test reads the text on stdin; rate/pitch in -100..100 (0 = the voice's own)."""
    name = voice.split(":", 1)[1]
    try:
        r = subprocess.run(["RHVoice-test", "-p", name, "-r", str(100 + params["rate"]),
                            "-t", str(100 + params["pitch"]), "-o", out],
                           input=text.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def synth_pico(voice: str, params: dict, text: str, out: str) -> bool:
    """pico2wave has no rate or pitch control: sox changes tempo and pitch afterwards."""
    name = voice.split(":", 1)[1]
    raw = out + ".pico.wav"
    ok = _run(["pico2wave", "-l", name, "-w", raw, text])
    if ok:
        ok = _run(["sox", "-R", "-V1", raw, out, "tempo", "-s", str(params["tempo"]),
                   "pitch", str(params["pitch_cents"])])
    if os.path.exists(raw):
        os.remove(raw)
    return ok


def synth_mbrola(voice: str, params: dict, text: str, out: str) -> bool:
    """espeak-ng's front end with the MBROLA diphone voice mb-<name> (system data dir)."""
    name = voice.split(":", 1)[1]
    return _run(["espeak-ng", "-v", "mb-" + name, "-s", str(params["wpm"]),
                 "-p", str(params["pitch"]), "-w", out, text])


def _scheme_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _festival_script(voice: str, items: list[tuple[str, dict, str]], workdir: str) -> None:
    name = voice.split(":", 1)[1]
    lines = [f"(voice_{name})"]
    if name == "cmu_us_slt_arctic_hts":
        lines.append("(set! sluice_hts_base hts_engine_params)")
    for text, params, out in items:
        if name == "cmu_us_slt_arctic_hts":
            lines.append(f'(set! hts_engine_params (append sluice_hts_base (list (list "-r" '
                         f'{params["speed"]}))))')
        else:
            lines.append(f"(Parameter.set 'Duration_Stretch {params['stretch']})")
            lines.append(f"(set! int_lr_params '((target_f0_mean {params['f0_mean']}) "
                         f"(target_f0_std {params['f0_std']}) (model_f0_mean 170) "
                         f"(model_f0_std 34)))")
        lines.append(f"(utt.save.wave (SynthText {_scheme_str(text)}) {_scheme_str(out)} 'riff)")
    script = os.path.join(workdir, f"festival_{name}.scm")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    _run(["festival", "-b", script], timeout=60 + 10 * len(items))


def synth_festival(voice: str, items: list[tuple[str, dict, str]], workdir: str) -> None:
    """Synthesise items (text, params, out_path) of one festival voice in as few festival
    processes as possible (start-up takes about a second). A sentence that makes festival stop
    leaves no output and is skipped; the batch goes on after it."""
    pending = list(items)
    while pending:
        _festival_script(voice, pending, workdir)
        failed = next((i for i, it in enumerate(pending) if not os.path.exists(it[2])), None)
        if failed is None:
            return
        pending = pending[failed + 1:]
