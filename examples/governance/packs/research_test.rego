package claimwatch.packs.research_test

import data.claimwatch.packs.research

ask(arguments) := d if {
	d := research.decision with input as {"tool": "read_record", "arguments": arguments}
}

test_authorized_research_requester if {
	d := ask({"purpose": "research", "requester": "dr.lee@irb.example.edu"})
	d.decision == "allow"
	d.kind == "research_authorized"
	d.strength == 0.7
	d.claim == "irb.example.edu is an authorized research requester, purpose research"
}

test_domain_is_case_insensitive if {
	d := ask({"purpose": "research", "requester": "Dr.Lee@IRB.Example.EDU"})
	d.kind == "research_authorized"
}

test_other_purpose_is_baseline if {
	d := ask({"purpose": "marketing", "requester": "dr.lee@irb.example.edu"})
	d.kind == "baseline_allow"
}

test_unknown_domain_is_baseline if {
	d := ask({"purpose": "research", "requester": "analyst@ads.example.com"})
	d.kind == "baseline_allow"
}

test_requester_without_at_sign_is_baseline if {
	d := ask({"purpose": "research", "requester": "irb.example.edu"})
	d.kind == "baseline_allow"
}

test_no_requester_is_baseline if {
	d := ask({"purpose": "research"})
	d.kind == "baseline_allow"
}
