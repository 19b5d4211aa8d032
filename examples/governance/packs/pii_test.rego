package claimwatch.packs.pii_test

import data.claimwatch.packs.pii

note := "Patient Jane Roe, MRN 00482913, seen 2026-11-30 for E11.9. Contact: jane.roe@mail.example.net"

test_mrn_with_a_diagnosis_is_phi if {
	d := pii.decision with input as {"texts": [{"pointer": "/content/0/text", "text": note}]}
	d.decision == "deny"
	d.kind == "phi_detected"
	d.strength == 0.9
}

test_mrn_and_diagnosis_in_two_texts_is_phi if {
	d := pii.decision with input as {"texts": [
		{"pointer": "/content/0/text", "text": "MRN 00482913"},
		{"pointer": "/structured/dx", "text": "E11.9"},
	]}
	d.kind == "phi_detected"
}

test_mrn_alone_is_no_phi if {
	d := pii.decision with input as {"texts": [{"pointer": "/content/0/text", "text": "MRN 00482913"}]}
	d.kind == "baseline_allow"
}

test_code_without_decimal_is_no_diagnosis if {
	d := pii.decision with input as {"texts": [{"pointer": "/a", "text": "MRN 00482913 room E11"}]}
	d.kind == "baseline_allow"
}

test_emails_are_left_to_the_scanner if {
	d := pii.decision with input as {"texts": [{
		"pointer": "/content/0/text",
		"text": "Write to alice@example.org or bob@example.org.",
	}]}
	d.decision == "allow"
	d.kind == "baseline_allow"
}

test_no_texts_is_the_baseline if {
	d := pii.decision with input as {}
	d.kind == "baseline_allow"
}
