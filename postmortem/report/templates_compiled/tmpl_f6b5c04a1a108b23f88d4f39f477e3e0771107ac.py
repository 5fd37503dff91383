from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_timeline.svg.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_svg_id = resolve('svg_id')
    l_0_svg = resolve('svg')
    l_0_sid = missing
    try:
        t_1 = environment.filters['default']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'default' found.")
    try:
        t_2 = environment.filters['max']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'max' found.")
    try:
        t_3 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    l_0_sid = t_1((undefined(name='svg_id') if l_0_svg_id is missing else l_0_svg_id), 'tl')
    context.vars['sid'] = l_0_sid
    context.exported_vars.add('sid')
    yield '<svg class="timeline" viewBox="0 0 '
    yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'width')))
    yield ' '
    yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'height')))
    yield '" width="100%" role="img" aria-label="timeline swimlanes">\n'
    l_1_loop = missing
    for l_1_band, l_1_loop in LoopContext(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'bands'), undefined):
        _loop_vars = {}
        pass
        yield '<g class="band band-'
        yield escape(environment.finalize(environment.getattr(l_1_band, 'name')))
        yield '"'
        if (not t_3(environment.getattr(l_1_band, 't0'))):
            pass
            yield ' data-t0="'
            yield escape(environment.finalize(environment.getattr(l_1_band, 't0')))
            yield '" data-t1="'
            yield escape(environment.finalize(environment.getattr(l_1_band, 't1')))
            yield '" data-full0="'
            yield escape(environment.finalize(environment.getitem(environment.getattr(l_1_band, 'full'), 0)))
            yield '" data-full1="'
            yield escape(environment.finalize(environment.getitem(environment.getattr(l_1_band, 'full'), 1)))
            yield '" data-left="'
            yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_left')))
            yield '" data-right="'
            yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_right')))
            yield '"'
        yield '>\n  <clipPath id="'
        yield escape(environment.finalize((undefined(name='sid') if l_0_sid is missing else l_0_sid)))
        yield '-clip-'
        yield escape(environment.finalize(environment.getattr(l_1_loop, 'index')))
        yield '"><rect x="'
        yield escape(environment.finalize((environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_left') - 8)))
        yield '" y="'
        yield escape(environment.finalize((environment.getattr(l_1_band, 'top') + 18)))
        yield '" width="'
        yield escape(environment.finalize(((environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_right') - environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_left')) + 16)))
        yield '" height="'
        yield escape(environment.finalize((environment.getattr(l_1_band, 'bottom') - environment.getattr(l_1_band, 'top'))))
        yield '"/></clipPath>\n  <text x="4" y="'
        yield escape(environment.finalize((environment.getattr(l_1_band, 'top') + 15)))
        yield '" class="band-title">'
        yield escape(environment.finalize(environment.getattr(l_1_band, 'title')))
        yield '</text>\n'
        for l_2_lane in environment.getattr(l_1_band, 'lanes'):
            _loop_vars = {}
            pass
            yield '  <g class="lane" data-lane="'
            yield escape(environment.finalize(environment.getattr(l_2_lane, 'number')))
            yield '">\n    <line x1="'
            yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_left')))
            yield '" x2="'
            yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'plot_right')))
            yield '" y1="'
            yield escape(environment.finalize(environment.getattr(l_2_lane, 'y')))
            yield '" y2="'
            yield escape(environment.finalize(environment.getattr(l_2_lane, 'y')))
            yield '" class="lane-line"/>\n    <text x="'
            yield escape(environment.finalize(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'label_width')))
            yield '" y="'
            yield escape(environment.finalize((environment.getattr(l_2_lane, 'y') + 4)))
            yield '" class="lane-label" text-anchor="end"><title>'
            yield escape(environment.finalize(environment.getattr(l_2_lane, 'full_label')))
            yield '</title>'
            yield escape(environment.finalize(environment.getattr(l_2_lane, 'label')))
            yield '</text>\n  </g>\n'
        l_2_lane = missing
        l_2_loop = missing
        for (l_2_x, l_2_label), l_2_loop in LoopContext(environment.getattr(l_1_band, 'ticks'), undefined):
            _loop_vars = {}
            pass
            yield '  <g class="tick-mark">\n  <line x1="'
            yield escape(environment.finalize(l_2_x))
            yield '" x2="'
            yield escape(environment.finalize(l_2_x))
            yield '" y1="'
            yield escape(environment.finalize((environment.getattr(l_1_band, 'top') + 20)))
            yield '" y2="'
            yield escape(environment.finalize((environment.getattr(l_1_band, 'bottom') - 16)))
            yield '" class="tick"/>\n  <text x="'
            yield escape(environment.finalize(l_2_x))
            yield '" y="'
            yield escape(environment.finalize((environment.getattr(l_1_band, 'bottom') - 4)))
            yield '" class="tick-label" text-anchor="'
            yield escape(environment.finalize(('start' if environment.getattr(l_2_loop, 'first') else ('end' if environment.getattr(l_2_loop, 'last') else 'middle'))))
            yield '">'
            yield escape(environment.finalize(l_2_label))
            yield '</text>\n  </g>\n'
        l_2_loop = l_2_x = l_2_label = missing
        yield '  <g class="marks" clip-path="url(#'
        yield escape(environment.finalize((undefined(name='sid') if l_0_sid is missing else l_0_sid)))
        yield '-clip-'
        yield escape(environment.finalize(environment.getattr(l_1_loop, 'index')))
        yield ')">\n'
        for l_2_d in environment.getattr(l_1_band, 'dots'):
            _loop_vars = {}
            pass
            yield '  <a href="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'href')))
            yield '" class="mark" data-src="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'source')))
            yield '" data-lane="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'lane')))
            yield '"'
            if (not t_3(environment.getattr(l_2_d, 't'))):
                pass
                yield ' data-t="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 't')))
                yield '" data-te="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 't_end')))
                yield '" data-u="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'u')))
                yield '"'
            yield '>\n    <title>'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'title')))
            yield '</title>\n'
            if environment.getattr(l_2_d, 'is_root'):
                pass
                yield '<line x1="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'x')))
                yield '" x2="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'x')))
                yield '" y1="'
                yield escape(environment.finalize((environment.getattr(l_1_band, 'top') + 20)))
                yield '" y2="'
                yield escape(environment.finalize((environment.getattr(l_1_band, 'bottom') - (16 if environment.getattr(l_1_band, 'ticks') else 0))))
                yield '" class="root-line"/>'
            if (not t_3(environment.getattr(l_2_d, 'bar_left'))):
                pass
                yield '<rect x="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'bar_left')))
                yield '" y="'
                yield escape(environment.finalize((environment.getattr(l_2_d, 'y') - 4)))
                yield '" width="'
                yield escape(environment.finalize(t_2(environment, [(environment.getattr(l_2_d, 'bar_right') - environment.getattr(l_2_d, 'bar_left')), 1])))
                yield '" height="8" class="bar src-'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'source')))
                yield '"/>'
            if (environment.getattr(l_2_d, 'x_end') > environment.getattr(l_2_d, 'x')):
                pass
                yield '<line x1="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'x')))
                yield '" x2="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'x_end')))
                yield '" y1="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'y')))
                yield '" y2="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'y')))
                yield '" class="span src-'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'source')))
                yield '"/>'
            yield '    <circle cx="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'x')))
            yield '" cy="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'y')))
            yield '" r="'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'r')))
            yield '" class="dot src-'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'source')))
            yield ' sev-'
            yield escape(environment.finalize(environment.getattr(l_2_d, 'severity')))
            yield '"/>\n'
            if environment.getattr(l_2_d, 'is_root'):
                pass
                yield '<circle cx="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'x')))
                yield '" cy="'
                yield escape(environment.finalize(environment.getattr(l_2_d, 'y')))
                yield '" r="'
                yield escape(environment.finalize((environment.getattr(l_2_d, 'r') + 4)))
                yield '" class="root-ring"/>'
            if environment.getattr(l_2_d, 'root_label'):
                pass
                yield '<text x="'
                yield escape(environment.finalize(((environment.getattr(l_2_d, 'x') + environment.getattr(l_2_d, 'r')) + 6)))
                yield '" y="'
                yield escape(environment.finalize((environment.getattr(l_2_d, 'y') - 6)))
                yield '" class="root-label">root</text>'
            yield '  </a>\n'
        l_2_d = missing
        yield '  </g>\n</g>\n'
    l_1_loop = l_1_band = missing
    yield '</svg>'

blocks = {}
debug_info = '1=32&2=36&3=41&4=45&5=63&6=75&7=79&8=83&9=85&10=93&13=103&15=107&16=115&19=125&20=129&21=133&22=149&23=151&24=162&25=173&26=187&27=197&28=206'