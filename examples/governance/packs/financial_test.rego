package claimwatch.packs.financial_test

import data.claimwatch.packs.financial

statement := "IBAN DE89 3704 0044 0532 0130 00, balance 1250.00 EUR"

export(arguments) := d if {
	d := financial.decision with input as {
		"tool": "export_statement",
		"arguments": arguments,
		"texts": [{"pointer": "/content/0/text", "text": statement}],
	}
}

test_statement_for_research_is_restricted if {
	d := export({"purpose": "research", "requester": "dr.lee@irb.example.edu"})
	d.decision == "deny"
	d.kind == "financial_restricted"
	d.strength == 0.8
	contains(d.claim, "research")
}

test_statement_without_purpose_is_restricted if {
	d := export({"account_id": "ACC-1"})
	d.kind == "financial_restricted"
	contains(d.claim, "an unstated purpose")
}

test_audit_masks_ibans if {
	d := export({"purpose": "audit"})
	d.decision == "modify"
	d.kind == "financial_masking"
	d.mask[0].label == "IBAN"
	regex.match(d.mask[0].pattern, "DE89 3704 0044 0532 0130 00")
}

test_mask_leaves_amounts if {
	d := export({"purpose": "audit"})
	not regex.match(d.mask[0].pattern, "1250.00 EUR")
}

test_other_tools_are_baseline if {
	d := financial.decision with input as {"tool": "read_record", "arguments": {"purpose": "research"}}
	d.kind == "baseline_allow"
	not d.mask
}
