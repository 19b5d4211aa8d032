"""The passage comparator on claimwatch's own cases: rules, guards, five scripts, symmetry."""

from __future__ import annotations

import importlib
from importlib import resources

import pytest
from claimwatch.core.text import compare, compare_passages
from claimwatch.core.text.tables import lexicon
from claimwatch.core.text.tokenize import analyze
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import REPO

#: The module (the package exports its `compare` function under the same name).
compare_module = importlib.import_module("claimwatch.core.text.compare")
ROOT = REPO
PEER = ROOT.parent / "shared" / "peers" / "citenexus" / "conflict.json"

#: (id, left, right, conflict, rule) in domains and phrasings the peer suite does not use.
ENGLISH = [
    # antonym pairs, from the table and by negative prefix
    ("antonym-ops", "The firewall rule was activated on Monday.",
     "The firewall rule was deactivated on Monday.", True, "antonym"),
    ("antonym-engineering", "The bridge is safe for heavy trucks.",
     "The bridge is dangerous for heavy trucks.", True, "antonym"),
    ("antonym-court", "The defendant was found guilty of fraud.",
     "The defendant was found innocent of fraud.", True, "antonym"),
    ("antonym-irregular-verb", "The bond price rose sharply on Tuesday.",
     "The bond price fell sharply on Tuesday.", True, "antonym"),
    ("antonym-sequence", "Backups run before the nightly deploy.",
     "Backups run after the nightly deploy.", True, "antonym"),
    ("antonym-prefix-in", "The survey results are accurate.",
     "The survey results are inaccurate.", True, "antonym"),
    ("antonym-prefix-un-inflected", "The backups are encrypted at rest.",
     "The backups are unencrypted at rest.", True, "antonym"),
    ("antonym-prefix-non", "The contract is nonbinding for both parties.",
     "The contract is binding for both parties.", True, "antonym"),
    ("antonym-two-pairs-cancel", "The alloy expands when heated.",
     "The alloy contracts when cooled.", False, None),
    # negation parity
    ("negation-insurance", "The warranty covers water damage.",
     "The warranty does not cover water damage.", True, "negation"),
    ("negation-contraction", "The API supports cursor pagination.",
     "The API doesn't support cursor pagination.", True, "negation"),
    ("negation-hyphenated-non", "The contract is non-binding for both parties.",
     "The contract is binding for both parties.", True, "negation"),
    ("negation-lexical", "Pets are permitted in the cabin.",
     "Pets are forbidden in the cabin.", True, "negation"),
    ("negation-lexical-synonym", "Smoking is banned inside the terminal building.",
     "Smoking is allowed inside the terminal building.", True, "negation"),
    ("negation-liability", "The vendor is liable for data loss.",
     "The vendor is not liable for data loss.", True, "negation"),
    ("negation-double-is-affirmation", "The exemption is not invalid for residents.",
     "The exemption is valid for residents.", False, None),
    ("negation-not-only-is-no-negation", "The module is not only fast but also cheap.",
     "The module is fast and cheap.", False, None),
    # negation inside reported speech is a third party's
    ("reported-claimed-that", "The supplier claimed that the shipment was not delayed at customs.",
     "The shipment was delayed at customs.", False, None),
    ("reported-according-to", "According to the supplier, the shipment was not delayed at customs.",
     "According to the supplier, the shipment was delayed at customs.", False, None),
    ("reported-control", "The shipment was not delayed at customs.",
     "The shipment was delayed at customs.", True, "negation"),
    # numeric divergence: units compared after conversion, containment is elaboration
    ("value-memory", "The server has 64 GB of memory.",
     "The server has 128 GB of memory.", True, "value"),
    ("value-converted-data", "The upload limit is 3000 kb.",
     "The upload limit is 2 mb.", True, "value"),
    ("value-converted-duration", "The escalation threshold is 2 hours.",
     "The escalation threshold is 90 minutes.", True, "value"),
    ("value-calendar", "The trial lasted 12 months.", "The trial lasted 2 years.", True, "value"),
    ("value-currency-symbol", "The penalty is $500 per breach of contract.",
     "The penalty is $800 per breach of contract.", True, "value"),
    ("value-temperature-symbols", "The reactor temperature is 300 °C.",
     "The reactor temperature is 350 ℃.", True, "value"),
    ("value-equal-data", "The upload limit is 2000 kb.", "The upload limit is 2 mb.", False, None),
    ("value-equal-volume", "The tank holds 1.5 l of coolant.",
     "The tank holds 1500 ml of coolant.", False, None),
    ("value-equal-calendar-word", "The trial lasted 12 months.",
     "The trial lasted one year.", False, None),
    ("value-units-differ", "The fine is 200 usd.", "The fine is 180 eur.", False, None),
    ("value-containment", "The kit contains 20 tablets.",
     "The kit contains 20 tablets and 5 syringes.", False, None),
    # guards
    ("guard-residual-scope", "The staging database is backed up every 6 hours.",
     "The production database is backed up every 24 hours.", False, None),
    ("guard-min-content-value", "Prices rose in 2021.", "Prices rose in 2022.", False, None),
    ("guard-exact-flip-two-words", "Arbitration is required.",
     "Arbitration is not required.", True, "negation"),
    ("guard-two-words-need-exact-flip", "Payment is required.",
     "Advance payment is not required.", False, None),
    ("guard-total-divergence", "The north gate is open and the alarm is enabled.",
     "The north gate is not closed and the alarm is disabled.", False, None),
    ("guard-unrelated-shared-word", "The sprint review is not scheduled for Friday.",
     "The tax review found 3 errors in the ledger.", False, None),
]  # fmt: skip

#: (id, left, right, rule or None, signal words): at least five conflicts per script, whose
#: negation and antonym words do not occur in the peer file, plus guards.
NON_LATIN = [
    # Tamil
    ("ta-negation-illai", "இந்த அட்டைக்கு ஆண்டுக் கட்டணம் உண்டு.",
     "இந்த அட்டைக்கு ஆண்டுக் கட்டணம் இல்லை.", "negation", ["இல்லை"]),
    ("ta-negation-alla", "குமார் நிறுவனத்தின் நிர்வாக இயக்குநர் அல்ல.",
     "குமார் நிறுவனத்தின் நிர்வாக இயக்குநர்.", "negation", ["அல்ல"]),
    ("ta-negation-mattathu", "நிறுவனம் தரவை விற்கும்.",
     "நிறுவனம் தரவை விற்க மாட்டாது.", "negation", ["மாட்டாது"]),
    ("ta-negation-verb-suffix", "கூடுதல் கட்டணம் வசூலிக்கப்படும்.",
     "கூடுதல் கட்டணம் வசூலிக்கப்படாது.", "negation", ["வசூலிக்கப்படாது"]),
    ("ta-lexical-ban", "பூங்காவில் நாய்களுக்கு அனுமதி உண்டு.",
     "பூங்காவில் நாய்களுக்கு தடை உண்டு.", "negation", ["தடை", "அனுமதி"]),
    ("ta-antonym-increase", "நிறுவனத்தின் வருவாய் இந்த ஆண்டு அதிகரித்தது.",
     "நிறுவனத்தின் வருவாய் இந்த ஆண்டு குறைந்தது.", "antonym", ["அதிகரித்தது", "குறைந்தது"]),
    ("ta-antonym-success", "ஏவுகணை சோதனை வெற்றிகரமாக முடிந்தது.",
     "ஏவுகணை சோதனை தோல்வியில் முடிந்தது.", "antonym", ["வெற்றிகரமாக", "தோல்வியில்"]),
    ("ta-antonym-open", "அருங்காட்சியகம் ஞாயிற்றுக்கிழமை திறந்திருக்கும்.",
     "அருங்காட்சியகம் ஞாயிற்றுக்கிழமை மூடப்பட்டிருக்கும்.", "antonym",
     ["திறந்திருக்கும்", "மூடப்பட்டிருக்கும்"]),
    ("ta-reported-quotative", "அமைச்சர் பாலம் பாதுகாப்பானது அல்ல என்று கூறினார்.",
     "அமைச்சர் பாலம் பாதுகாப்பானது என்று கூறினார்.", None, ["அல்ல"]),
    ("ta-guard-scope", "வடக்கு பாலம் பாதுகாப்பானது அல்ல.",
     "தெற்கு பாலம் பாதுகாப்பானது.", None, ["அல்ல"]),
    # Telugu
    ("te-negation-kaadu", "ఈ అద్దె ఒప్పందం చట్టబద్ధమైనది.",
     "ఈ అద్దె ఒప్పందం చట్టబద్ధమైనది కాదు.", "negation", ["కాదు"]),
    ("te-negation-kuudadu", "ఉద్యోగులు ఇంటి నుండి పని చేయవచ్చు.",
     "ఉద్యోగులు ఇంటి నుండి పని చేయకూడదు.", "negation", ["చేయకూడదు"]),
    ("te-negation-vaddu", "రోగులు ఈ మందు తీసుకోవచ్చు.",
     "రోగులు ఈ మందు తీసుకోవద్దు.", "negation", ["తీసుకోవద్దు"]),
    ("te-lexical-ban", "పార్కులో కుక్కలకు అనుమతి ఉంది.",
     "పార్కులో కుక్కలకు నిషేధం ఉంది.", "negation", ["నిషేధం", "అనుమతి"]),
    ("te-antonym-increase", "ఈ సంవత్సరం కంపెనీ ఆదాయం పెరిగింది.",
     "ఈ సంవత్సరం కంపెనీ ఆదాయం తగ్గింది.", "antonym", ["పెరిగింది", "తగ్గింది"]),
    ("te-antonym-success", "ఉపగ్రహ ప్రయోగం విజయవంతమైంది.",
     "ఉపగ్రహ ప్రయోగం విఫలమైంది.", "antonym", ["విజయవంతమైంది", "విఫలమైంది"]),
    ("te-antonym-open", "ఆదివారం గ్రంథాలయం తెరిచి ఉంటుంది.",
     "ఆదివారం గ్రంథాలయం మూసి ఉంటుంది.", "antonym", ["తెరిచి", "మూసి"]),
    ("te-reported-quotative", "ప్రభుత్వం వంతెన సురక్షితం కాదు అని చెప్పింది.",
     "ప్రభుత్వం వంతెన సురక్షితం అని చెప్పింది.", None, ["కాదు"]),
    ("te-guard-scope", "ఉత్తర వంతెన సురక్షితం కాదు.", "దక్షిణ వంతెన సురక్షితం.", None, ["కాదు"]),
    # Arabic
    ("ar-negation-la", "الشركة تقبل الدفع النقدي.",
     "الشركة لا تقبل الدفع النقدي.", "negation", ["لا"]),
    ("ar-negation-laysa", "المدير مسؤول عن هذا القرار.",
     "المدير ليس مسؤولاً عن هذا القرار.", "negation", ["ليس"]),
    ("ar-negation-lan", "الشركة لن تغير سياسة الخصوصية.",
     "الشركة تغير سياسة الخصوصية.", "negation", ["لن"]),
    ("ar-lexical-forbidden", "التدخين مسموح داخل المبنى.",
     "التدخين ممنوع داخل المبنى.", "negation", ["ممنوع", "مسموح"]),
    ("ar-antonym-rise", "ارتفعت أسعار النفط هذا الأسبوع.",
     "انخفضت أسعار النفط هذا الأسبوع.", "antonym", ["ارتفعت", "انخفضت"]),
    ("ar-antonym-success", "نجحت العملية الجراحية للمريض.",
     "فشلت العملية الجراحية للمريض.", "antonym", ["نجحت", "فشلت"]),
    ("ar-antonym-open", "المتحف مفتوح يوم الجمعة.",
     "المتحف مغلق يوم الجمعة.", "antonym", ["مفتوح", "مغلق"]),
    ("ar-antonym-mandatory", "حضور التدريب إلزامي لجميع الموظفين.",
     "حضور التدريب اختياري لجميع الموظفين.", "antonym", ["إلزامي", "اختياري"]),
    ("ar-reported-said", "قال المتحدث إن المصنع لا يستخدم مواد خطرة.",
     "قال المتحدث إن المصنع يستخدم مواد خطرة.", None, ["لا"]),
    ("ar-guard-scope", "ارتفعت أسعار النفط في آسيا.",
     "انخفضت أسعار النفط في أوروبا.", None, ["ارتفعت", "انخفضت"]),
    # Japanese
    ("ja-negation-nai", "このサービスは日曜日に利用できる。",
     "このサービスは日曜日に利用できない。", "negation", ["ない"]),
    ("ja-negation-masen", "当社は個人情報を第三者に提供します。",
     "当社は個人情報を第三者に提供しません。", "negation", ["ません"]),
    ("ja-negation-prefix-fu", "この返金手続きは適切である。",
     "この返金手続きは不適切である。", "negation", ["不"]),
    ("ja-lexical-prohibited", "館内での撮影は許可されている。",
     "館内での撮影は禁止されている。", "negation", ["禁止", "許可"]),
    ("ja-antonym-increase", "今年の売上は前年より増加した。",
     "今年の売上は前年より減少した。", "antonym", ["増加", "減少"]),
    ("ja-antonym-approve", "取締役会は合併案を承認した。",
     "取締役会は合併案を却下した。", "antonym", ["承認", "却下"]),
    ("ja-antonym-valid", "このクーポンは週末も有効です。",
     "このクーポンは週末も無効です。", "antonym", ["有効", "無効"]),
    ("ja-reported-quotative", "同社は製品に欠陥はないと主張した。",
     "同社は製品に欠陥があると主張した。", None, ["ない"]),
    ("ja-guard-scope", "東京店は日曜日に営業しない。",
     "大阪店は日曜日に営業する。", None, ["ない"]),
    # Chinese
    ("zh-negation-bu", "该药物适合儿童使用。", "该药物不适合儿童使用。", "negation", ["不"]),
    ("zh-negation-meiyou", "公司已经支付了这笔罚款。",
     "公司没有支付这笔罚款。", "negation", ["没有"]),
    ("zh-negation-wei", "该航班已按时起飞。", "该航班未按时起飞。", "negation", ["未"]),
    ("zh-lexical-prohibited", "公园内允许遛狗。", "公园内禁止遛狗。", "negation", ["禁止", "允许"]),
    ("zh-antonym-prices", "今年第一季度房价上涨。",
     "今年第一季度房价下跌。", "antonym", ["上涨", "下跌"]),
    ("zh-antonym-approve", "董事会批准了合并方案。",
     "董事会拒绝了合并方案。", "antonym", ["批准", "拒绝"]),
    ("zh-antonym-enable", "系统默认开启自动备份功能。",
     "系统默认关闭自动备份功能。", "antonym", ["开启", "关闭"]),
    ("zh-reported-claimed", "该公司声称其产品不含有害物质。",
     "该公司声称其产品含有害物质。", None, ["不"]),
    ("zh-guard-scope", "北京分店周日不营业。", "上海分店周日营业。", None, ["不"]),
]  # fmt: skip

#: Numbers outside ASCII and flush against CJK text: (id, left, right, conflict, detail).
NUMBERS = [
    ("full-width-digits-ja", "保証期間は１２か月です。",
     "保証期間は２４か月です。", True, "12 vs 24"),
    ("full-width-percent-ja", "年利率は５％です。", "年利率は７％です。", True, "5 vs 7"),
    ("full-width-calendar-equal-ja", "保証期間は１２か月です。",
     "保証期間は1年です。", False, None),
    ("arabic-indic-digits", "مدة الضمان ٢ سنوات.", "مدة الضمان ٣ سنوات.", True, "2 vs 3"),
    ("flush-zh-converted-equal", "会议时长为2小时。", "会议时长为120分钟。", False, None),
    ("flush-zh-converted-conflict", "会议时长为2小时。", "会议时长为90分钟。", True,
     "2 小时 vs 90 分钟"),
    ("units-shown-when-they-differ", "The escalation threshold is 2 hours.",
     "The escalation threshold is 90 minutes.", True, "2 hours vs 90 minutes"),
]  # fmt: skip


def _verdict(left: str, right: str) -> tuple[bool, str | None]:
    verdict = compare(left, right)
    return verdict.conflict, verdict.rule


@pytest.mark.parametrize(("left", "right", "conflict", "rule"), [c[1:] for c in ENGLISH],
                         ids=[c[0] for c in ENGLISH])  # fmt: skip
def test_english_rules_and_guards(left: str, right: str, conflict: bool, rule: str | None) -> None:
    """Each rule fires, and each guard declines, on phrasings outside the peer suite."""
    assert (conflict, rule) == _verdict(left, right)


@pytest.mark.parametrize(("left", "right", "rule", "signals"), [c[1:] for c in NON_LATIN],
                         ids=[c[0] for c in NON_LATIN])  # fmt: skip
def test_non_latin_rules(left: str, right: str, rule: str | None, signals: list[str]) -> None:
    """Negation, antonym, reported speech and scope guards in Tamil, Telugu, Arabic, ja, zh."""
    assert (rule is not None, rule) == _verdict(left, right)


@pytest.mark.parametrize(("left", "right", "conflict", "detail"), [c[1:] for c in NUMBERS],
                         ids=[c[0] for c in NUMBERS])  # fmt: skip
def test_numbers_beyond_ascii(left: str, right: str, conflict: bool, detail: str | None) -> None:
    """Full-width and Arabic-Indic digits are numbers; CJK units convert; details name values."""
    verdict = compare(left, right)
    assert (conflict, detail) == (verdict.conflict, verdict.detail)


def test_five_conflicts_per_non_latin_script() -> None:
    """At least five own conflicts per script, negation and antonym both among them."""
    counts: dict[str, set[str]] = {}
    for case_id, _, _, rule, _ in NON_LATIN:
        if rule is not None:
            counts.setdefault(case_id[:2], set()).add(case_id)
    assert {"ta", "te", "ar", "ja", "zh"} == set(counts)
    assert [] == [script for script, ids in counts.items() if len(ids) < 5]
    for script in counts:
        rules = {r for i, _, _, r, _ in NON_LATIN if i.startswith(script) and r is not None}
        assert {"negation", "antonym"} == rules


def test_own_signal_words_are_not_from_the_peer_file() -> None:
    """The tables are not fitted to the peer suite: own cases use other signal words."""
    assert "present" == ("present" if PEER.is_file() else f"missing: {PEER}")
    peer_text = PEER.read_text(encoding="utf-8")
    peer_words = {w.strip(".,:;!?()[]{}\"'،。、") for w in peer_text.split()}
    signals = [(i, w) for i, left, right, _, words in NON_LATIN for w in words]
    spaced = [(i, w) for i, w in signals if i[:2] not in ("ja", "zh")]  # words between spaces
    unspaced = [(i, w) for i, w in signals if i[:2] in ("ja", "zh")]  # any occurrence counts
    assert [] == [(i, w) for i, w in spaced if w in peer_words]
    assert [] == [(i, w) for i, w in unspaced if w in peer_text]
    assert [] == [c[0] for c in NON_LATIN if not all(w in c[1] + c[2] for w in c[4])]


def test_verdict_details() -> None:
    """Details name the diverging words or values, left first."""
    cases = [
        ("The backups are encrypted at rest.", "The backups are unencrypted at rest."),
        ("The vendor is not liable for data loss.", "The vendor is liable for data loss."),
        ("The server has 64 GB of memory.", "The server has 128 GB of memory."),
    ]
    details = ["encrypted vs unencrypted", "negated vs affirmed", "64 vs 128"]
    assert details == [compare(left, right).detail for left, right in cases]


def test_subject_overlap_guard_is_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the residual widened to 2, the overlap guard alone declines oral vs intravenous."""
    left, right = "The oral dose is 500 mg.", "The intravenous dose is 200 mg."
    assert (False, None) == _verdict(left, right)
    monkeypatch.setattr(compare_module, "MAX_RESIDUAL", 2)
    assert (False, None) == _verdict(left, right)
    monkeypatch.setattr(compare_module, "SUBJECT_OVERLAP", 0.5)
    assert (True, "value") == _verdict(left, right)


def test_total_divergence_guard_is_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two antonym pairs and a negation: residual 0, but a divergence of 4 words declines."""
    left = "The north gate is open and the alarm is enabled."
    right = "The north gate is not closed and the alarm is disabled."
    assert (False, None) == _verdict(left, right)
    monkeypatch.setattr(compare_module, "MAX_SYMDIFF", 4)
    assert (True, "negation") == _verdict(left, right)


def test_near_duplicates_need_the_same_polarity_and_come_after_conflict() -> None:
    """Surface clones collapse; a value change or a quoted negation does not."""
    base = "The invoice must be paid within 14 days of receipt."
    assert (False, True) == _pair(base, "The invoice shall be paid within 14 days of its receipt.")
    assert (True, False) == _pair(base, "The invoice must be paid within 30 days of receipt.")
    assert (False, False) == _pair(
        "The auditor said the ledger is not balanced at year end.",
        "The auditor said the ledger is balanced at year end.",
    )
    assert (False, True) == _pair("", "")
    assert (False, False) == _pair("", "The ledger is balanced.")


def _pair(left: str, right: str) -> tuple[bool, bool]:
    verdict = compare(left, right)
    return verdict.conflict, verdict.duplicate


def test_tables_are_package_data() -> None:
    """The word tables load from the JSON files shipped in the package."""
    lex = lexicon()
    data = resources.files("claimwatch.core.text").joinpath("data")
    names = {"en.json", "ta.json", "te.json", "ar.json", "ja.json", "zh.json", "units.json"}
    assert names == {entry.name for entry in data.iterdir() if entry.name.endswith(".json")}
    assert ("neg", "") == lex.words["not"]
    assert ("neg", "") == lex.cjk["没有"]
    assert frozenset({"reject"}) == lex.antonyms["approve"]


# --------------------------------------------------------------------------- symmetry

FRAGMENTS = [
    "The", "notice", "period", "is", "not", "30", "60", "days", "mg", "g", "1000", "approved",
    "rejected", "increased", "decreased", "claimed that", ",", ".", "vendor", "customer",
    "accurate", "inaccurate", "encrypted", "unencrypted", "never", "$5", "million", "%",
    "1.5", "l", "ml", "2 hours", "120 minutes", "per", "second", "prohibited", "permitted",
    "通知期間は", "３０日", "６０日です。", "ない", "不", "承認", "却下", "と主張した",
    "அறிவிப்பு", "இல்லை", "அதிகரித்தது", "குறைந்தது", "என்று", "లేదు", "పెరిగింది",
    "తగ్గింది", "అని", "لا", "ارتفعت", "انخفضت", "قال", "٣", "没有", "上涨", "下跌", "声称",
]  # fmt: skip


@st.composite
def passages(draw: st.DrawFn) -> tuple[str, str]:
    """Two passages: random, or one derived from the other by a small edit."""
    words = draw(st.lists(st.sampled_from(FRAGMENTS), max_size=12))
    if draw(st.booleans()):
        other = draw(st.lists(st.sampled_from(FRAGMENTS), max_size=12))
    else:
        other = list(words)
        for _ in range(draw(st.integers(0, 2))):
            other.insert(draw(st.integers(0, len(other))), draw(st.sampled_from(FRAGMENTS)))
    if draw(st.booleans()):
        return " ".join(words), " ".join(other)
    return draw(st.text(max_size=40)), " ".join(other)


def _mirror(detail: str | None) -> str | None:
    if detail is None:
        return None
    left, right = detail.split(" vs ")
    return f"{right} vs {left}"


@settings(max_examples=400, deadline=None)
@given(pair=passages())
def test_verdict_is_symmetric(pair: tuple[str, str]) -> None:
    """Swapping left and right gives the same verdict (the detail reads the other way round)."""
    left, right = pair
    forward, backward = compare(left, right), compare(right, left)
    mirrored = (forward.conflict, forward.rule, forward.duplicate, _mirror(forward.detail))
    assert mirrored == (backward.conflict, backward.rule, backward.duplicate, backward.detail)
    assert (forward.conflict, forward.rule is not None) == (forward.conflict, forward.conflict)
    assert False is (forward.conflict and forward.duplicate)
    assert forward == compare_passages(analyze(left), analyze(right))
